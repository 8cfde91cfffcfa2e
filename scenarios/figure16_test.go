package scenarios

import (
	"context"
	"testing"
	"time"
)

// TestElectionTrials runs a few crashes at T = 50ms and checks what cannot
// depend on load: a winner that had the last entry (the election
// restriction), at least one election, and no downtime shorter than the
// time a follower must go unheard minus the heartbeat it may just have had.
func TestElectionTrials(t *testing.T) {
	for _, preVote := range []bool{true, false} {
		cfg := DefaultElectionConfig()
		cfg.Timeout = 50 * time.Millisecond
		cfg.PreVote = preVote
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		lab, err := NewElectionLab(ctx, cfg)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		for seed := int64(1); seed <= 3; seed++ {
			tr, err := lab.Trial(ctx, seed)
			if err != nil {
				t.Fatalf("prevote %v seed %d: %v", preVote, seed, err)
			}
			t.Logf("prevote %v seed %d: %+v", preVote, seed, tr)
			if !tr.WinnerUpToDate || tr.Winner == tr.Crashed || tr.Winner == 0 {
				t.Errorf("seed %d: winner %d (crashed %d) up to date %v", seed, tr.Winner, tr.Crashed, tr.WinnerUpToDate)
			}
			if tr.Elections < 1 {
				t.Errorf("seed %d: %d elections", seed, tr.Elections)
			}
			if tr.Downtime < cfg.Timeout-cfg.HeartbeatInterval()*2 {
				t.Errorf("seed %d: downtime %s below %s", seed, tr.Downtime, cfg.Timeout-cfg.HeartbeatInterval()*2)
			}
		}
		_ = lab.Close()
		cancel()
	}
}
