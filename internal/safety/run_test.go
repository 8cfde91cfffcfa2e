package safety

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		// etcd's peer prober may still wait on a request a fault swallowed
		// when its member closes; it gives up at its 5s read timeout.
		deadline := time.Now().Add(15 * time.Second)
		err := goleak.Find(etcdtest.IgnoreEtcdGoroutines()...)
		for err != nil && time.Now().Before(deadline) {
			time.Sleep(500 * time.Millisecond)
			err = goleak.Find(etcdtest.IgnoreEtcdGoroutines()...)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// TestSafetyRun20s runs each check for 20 seconds against a real
// three-member cluster: with fencing it must pass; without, the nemesis
// must bite (at least one overlapping holder or lost update).
func TestSafetyRun20s(t *testing.T) {
	if testing.Short() {
		t.Skip("20-second runs against a three-member cluster")
	}
	for _, target := range []Target{TargetLock, TargetElection} {
		for _, fenced := range []bool{true, false} {
			name := string(target) + map[bool]string{true: "/fenced", false: "/unfenced"}[fenced]
			t.Run(name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				cfg := Config{Target: target, Duration: 20 * time.Second, Clients: 5, TTL: 2 * time.Second,
					Seed: 1, Fencing: fenced, DataDir: t.TempDir()}
				if testing.Verbose() {
					cfg.Progress = os.Stderr
				}
				rep, h, err := Run(ctx, cfg)
				require.NoError(t, err)
				t.Logf("%+v", rep)
				require.NotZero(t, rep.Acquisitions, "no client ever acquired")
				require.NotZero(t, rep.Writes, "no write was accepted")
				require.Equal(t, rep.Writes, len(h.Writes))
				require.NotZero(t, rep.Faults[string(FaultFreezeClient)], "the schedule froze no holder")
				require.True(t, rep.Passed, "violations: %+v", rep.Examples)
				if fenced {
					require.Zero(t, rep.Violations)
					require.Zero(t, rep.LostUpdates)
					require.True(t, rep.Linearizable)
				} else {
					require.Positive(t, rep.OverlappingHolders+rep.LostUpdates, "the nemesis did not bite")
				}
			})
		}
	}
}
