package cli

// The coordinated-election parts of coordctl elect: --policy and the
// attribute flags, --candidates.

func (o *electOptions) validateCoord() error {
	switch {
	case o.Candidates && (o.Observe || o.Proposal != "" || o.ID != ""):
		return usageErrorf("--candidates lists the queue: it takes no PROPOSAL, --id or --observe")
	case (o.Candidates || o.Observe) && o.Coord.Given():
		return usageErrorf("--policy, --priority, --version and --label are a candidate's: not with --candidates or --observe")
	}
	if _, err := o.Coord.Parse(); err != nil {
		return &usageError{err: err}
	}
	return nil
}
