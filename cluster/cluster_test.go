package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func labConfig(n int) Config {
	cfg := DefaultConfig()
	cfg.Nodes = n
	cfg.OpTimeout = 3 * time.Second
	return cfg
}

// steadyConfig is labConfig with Raft's timeouts ten times the default, for
// tests that measure a leader's writes rather than elections: a starved
// machine (every node is a goroutine of the test process) then does not
// move the leadership under them ("leadership lost" in two loaded CI runs).
func steadyConfig(n int) Config {
	cfg := labConfig(n)
	cfg.Timing.Heartbeat, cfg.Timing.Election, cfg.Timing.LeaderLease = time.Second, 1500*time.Millisecond, 750*time.Millisecond
	return cfg
}

func startLab(t *testing.T, cfg Config) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := New(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func TestLabBasicOps(t *testing.T) {
	c := startLab(t, labConfig(3))
	ctx := context.Background()
	cl := c.NewClient(0)
	// Before any write the leader's last committed entry is its no-op,
	// which the state machine never sees: readindex must not wait for it.
	for _, m := range ReadModes() {
		r, err := cl.Get(ctx, "x", m)
		require.NoError(t, err, m)
		require.False(t, r.Found)
	}
	_, err := cl.Put(ctx, "x", "1")
	require.NoError(t, err)
	for _, m := range ReadModes() {
		r, err := cl.Get(ctx, "x", m)
		require.NoError(t, err, m)
		if m != ReadStale {
			require.Equal(t, "1", r.Value, m)
			require.True(t, r.Found)
		}
	}
	r, err := cl.CAS(ctx, "x", "1", "2")
	require.NoError(t, err)
	require.True(t, r.Swapped)
	r, err = cl.CAS(ctx, "x", "1", "3")
	require.NoError(t, err)
	require.False(t, r.Swapped)
	_, err = cl.Delete(ctx, "x")
	require.NoError(t, err)
	r, err = cl.Get(ctx, "x", ReadLog)
	require.NoError(t, err)
	require.False(t, r.Found)
	res := c.Check(5 * time.Second)
	require.True(t, res.Linearizable, res.Verdict)
	require.Empty(t, res.IllegalKeys)
}

func TestLabCheckNamesIllegalKeys(t *testing.T) {
	recs := []Record{
		{Client: 0, Op: OpPut, Key: "a", Value: "1", CallNs: 0, ReturnNs: 10, Outcome: OutcomeOK},
		{Client: 1, Op: OpGet, Key: "a", Value: "1", Found: true, CallNs: 20, ReturnNs: 30, Outcome: OutcomeOK},
		{Client: 0, Op: OpPut, Key: "b", Value: "1", CallNs: 0, ReturnNs: 10, Outcome: OutcomeOK},
		{Client: 0, Op: OpPut, Key: "b", Value: "2", CallNs: 11, ReturnNs: 19, Outcome: OutcomeOK},
		{Client: 1, Op: OpGet, Key: "b", Value: "1", Found: true, CallNs: 20, ReturnNs: 30, Outcome: OutcomeOK},
		// An unknown write may land later; a failed one never does.
		{Client: 2, Op: OpPut, Key: "c", Value: "9", CallNs: 0, ReturnNs: 5, Outcome: OutcomeUnknown},
		{Client: 2, Op: OpPut, Key: "d", Value: "9", CallNs: 0, ReturnNs: 5, Outcome: OutcomeFail},
		{Client: 1, Op: OpGet, Key: "c", Value: "9", Found: true, CallNs: 40, ReturnNs: 50, Outcome: OutcomeOK},
		{Client: 1, Op: OpGet, Key: "d", Found: false, CallNs: 40, ReturnNs: 50, Outcome: OutcomeOK},
	}
	res := CheckHistory(recs, 5*time.Second)
	require.False(t, res.Linearizable)
	require.Equal(t, []string{"b"}, res.IllegalKeys)
	require.Equal(t, 8, res.Ops, "the failed put is left out")
}

func TestLabTimelineRecordsLeaderFaultsAndOps(t *testing.T) {
	c := startLab(t, labConfig(3))
	ctx := context.Background()
	l, _ := leaderAndFollower(t, c)
	_, err := c.NewClient(0).Put(ctx, "x", "1")
	require.NoError(t, err)
	require.NoError(t, c.Isolate(l))
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nl, err := c.WaitNewLeader(wctx, l)
	require.NoError(t, err)
	c.Heal()
	// The new leader's state change reaches the timeline from its node's
	// observer, which may run after WaitNewLeader saw the leader (it did
	// once under a CPU hog): wait for it, then read the timeline once.
	require.Eventually(t, func() bool {
		for _, e := range c.Timeline() {
			if e.Kind == EventState && e.State == "Leader" && e.Node == nl {
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond, "the new leader's state in the timeline")
	kinds := map[EventKind]int{}
	var last int64
	leaders := map[NodeID]bool{}
	for _, e := range c.Timeline() {
		kinds[e.Kind]++
		require.GreaterOrEqual(t, e.AtNs, last, "time order")
		last = e.AtNs
		if e.Kind == EventState && e.State == "Leader" {
			leaders[e.Node] = true
		}
	}
	require.True(t, leaders[l] && leaders[nl], "both leaderships recorded: %v", leaders)
	require.Equal(t, 1, kinds[EventOp])
	require.Equal(t, 1, kinds[EventFault])
	require.Equal(t, 1, kinds[EventHeal])
	require.Positive(t, kinds[EventIndex])
	require.Positive(t, kinds[EventLeader])
}
