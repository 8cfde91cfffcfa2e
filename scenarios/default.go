package scenarios

// Default returns a new registry holding every scenario coordkit ships, in a
// fixed order: the lab cluster's availability and consistency first (1-7),
// then locks and leaders on etcd (8-9), then clocks and commit (10-12), then fencing in a SQL database (13-14).
// An error (wrapping ErrInvalid or ErrDuplicate) means a shipped scenario is
// malformed: a bug, which the tests catch.
func Default() (*Registry, error) {
	r := NewRegistry()
	for _, s := range all() {
		if err := r.Register(s); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func all() []Scenario {
	return []Scenario{
		staleRead(),          // 1
		quorumLoss(),         // 2
		minorityPartition(),  // 3
		evenSplit(),          // 4
		twoDC(),              // 5
		writeCost(),          // 6
		readLadder(),         // 7
		lockWithoutFencing(), // 8
		leaderFailover(),     // 9
		lamportUniqueness(),  // 10
		twoPhaseCommit(),     // 11
		lamportClocks(),      // 12
		fencedSQL(),          // 13
		advisoryLock(),       // 14
	}
}
