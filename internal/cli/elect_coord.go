package cli

import (
	"context"

	"github.com/coordkit/coordkit/election"
)

// The coordinated-election parts of coordctl elect: --policy and the
// attribute flags, --candidates, and the handover a policy asks for.

func (o *electOptions) validateCoord() error {
	switch {
	case o.Candidates && (o.Observe || o.Proposal != "" || o.ID != ""):
		return usageErrorf("--candidates lists the queue: it takes no PROPOSAL, --id or --observe")
	case (o.Candidates || o.Observe) && o.Coord.given():
		return usageErrorf("--policy, --priority, --version and --label are a candidate's: not with --candidates or --observe")
	}
	if _, _, err := o.Coord.parse(); err != nil {
		return err
	}
	return nil
}

// coordOptions are the election options the coordination flags ask for;
// none when no such flag was given (etcd's layout only).
func (o *electOptions) coordOptions() ([]election.Option, error) {
	if !o.Coord.given() {
		return nil, nil
	}
	id := ""
	if !o.Observe && !o.Candidates {
		id = o.value()
	}
	return o.Coord.options(id)
}

func printCandidates(ctx context.Context, f *factory, p *printer, e *election.Election) error {
	cctx, cancel := f.CommandContext(ctx)
	defer cancel()
	cs, err := e.Candidates(cctx)
	if err != nil {
		return err
	}
	if cs == nil {
		cs = []election.Candidate{}
	}
	return p.Print(candidatesOutput{Event: "candidates", Name: e.Name(), Candidates: cs})
}
