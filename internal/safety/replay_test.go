package safety

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSafetyReplaySchedule runs a given two-step schedule: the report's
// schedule is those steps, each applied no earlier than its offset, and
// each has an effect that names what it touched. Counts and order only.
func TestSafetyReplaySchedule(t *testing.T) {
	t.Parallel() // a cluster and a database of its own
	if testing.Short() {
		t.Skip("a 10-second run against a three-member cluster")
	}
	takeClusters(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	steps := []Step{
		{Kind: FaultIsolateLeader, Hold: 1500 * time.Millisecond, Quiet: 500 * time.Millisecond, At: 1500 * time.Millisecond},
		{Kind: FaultFreezeClient, Client: 2, Hold: 3 * time.Second, Quiet: 500 * time.Millisecond, At: 4 * time.Second},
	}
	cfg := Config{Target: TargetLock, Duration: 10 * time.Second, Clients: 3, TTL: time.Second, Seed: 1,
		DataDir: t.TempDir(), Schedule: steps}
	rep, _, err := Run(ctx, cfg)
	require.NoError(t, err)
	require.Len(t, rep.Schedule, 2, "the schedule as it ran")
	for i, s := range rep.Schedule {
		require.Equal(t, steps[i].Kind, s.Kind)
		require.GreaterOrEqual(t, s.At, steps[i].At, "applied no earlier than its offset")
	}
	require.Len(t, rep.Effects, 2)
	require.Equal(t, 1, rep.Effects[0].Step)
	require.Contains(t, rep.Effects[0].Target, "the leader")
	require.NotEmpty(t, rep.Effects[1].What)
	n := 0
	for _, e := range rep.Effects {
		if e.Effective {
			n++
		}
	}
	require.Equal(t, n, rep.EffectiveFaults)

	cfg.Schedule = []Step{{Kind: FaultFreezeClient, Client: 4, Hold: time.Second}}
	_, _, err = Run(ctx, cfg)
	require.ErrorIs(t, err, ErrBadSchedule, "client 4 of 3")
}
