package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func (g *requestGate) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// waitQueued waits until n client requests wait at paused node id.
func waitQueued(t *testing.T, c *Cluster, id NodeID, n int) {
	t.Helper()
	inc := c.current(id)
	require.Eventually(t, func() bool { return inc.reqs.queued() >= n }, 5*time.Second, time.Millisecond)
}

func leaderAndFollower(t *testing.T, c *Cluster) (NodeID, NodeID) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := c.WaitLeader(ctx)
	require.NoError(t, err)
	return l, NodeID(int(l)%c.Size() + 1)
}

// pausedLeaderSchedule: x=1 at leader L; L paused; a new leader takes x=2;
// then a client next to L reads x in mode; L resumes. Returns the read.
func pausedLeaderSchedule(t *testing.T, mode ReadMode) (*Cluster, Result) {
	c := startLab(t, labConfig(3))
	ctx := context.Background()
	old, _ := leaderAndFollower(t, c)
	_, err := c.NewClient(old).Put(ctx, "x", "1")
	require.NoError(t, err)
	require.NoError(t, c.Pause(old, 0))
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nl, err := c.WaitNewLeader(wctx, old)
	require.NoError(t, err)
	_, err = c.NewClient(nl).Put(ctx, "x", "2")
	require.NoError(t, err)

	done := make(chan Result, 1)
	go func() {
		r, _ := c.NewClient(old).Get(ctx, "x", mode)
		done <- r
	}()
	waitQueued(t, c, old, 1)
	require.NoError(t, c.Resume(old))
	return c, <-done
}

func TestLabReadModesUnderPausedLeader(t *testing.T) {
	cases := []struct {
		mode         ReadMode
		linearizable bool
	}{
		{ReadStale, false},
		{ReadLease, false},
		{ReadIndex, true},
		{ReadLog, true},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode), func(t *testing.T) {
			c, r := pausedLeaderSchedule(t, tc.mode)
			require.Equal(t, OutcomeOK, r.Outcome, r.Err)
			res := c.Check(10 * time.Second)
			require.Equal(t, tc.linearizable, res.Linearizable, "verdict %s, read returned %q", res.Verdict, r.Value)
			if tc.linearizable {
				require.Equal(t, "2", r.Value)
			} else {
				require.Equal(t, "1", r.Value)
			}
		})
	}
}

// A follower cut off from the majority serves stale reads; readindex and
// log reads through it fail (no leader) or return the new value.
func TestLabReadModesUnderPartition(t *testing.T) {
	cases := []struct {
		mode         ReadMode
		linearizable bool
	}{
		{ReadStale, false},
		{ReadIndex, true},
		{ReadLog, true},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode), func(t *testing.T) {
			cfg := labConfig(3)
			cfg.OpTimeout = time.Second
			c := startLab(t, cfg)
			ctx := context.Background()
			l, f := leaderAndFollower(t, c)
			r, err := c.NewClient(l).Put(ctx, "x", "1")
			require.NoError(t, err)
			_ = r
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			require.NoError(t, c.WaitApplied(wctx, c.current(l).fsm.appliedIndex()))
			require.NoError(t, c.Isolate(f))
			_, err = c.NewClient(l).Put(ctx, "x", "2")
			require.NoError(t, err)
			got, _ := c.NewClient(f).Get(ctx, "x", tc.mode)
			res := c.Check(10 * time.Second)
			require.Equal(t, tc.linearizable, res.Linearizable, "verdict %s, read %s %q", res.Verdict, got.Outcome, got.Value)
			// The same read from a client that finds the leader is fresh.
			fresh, err := c.NewClient(0).Get(ctx, "x", tc.mode)
			if tc.mode != ReadStale {
				require.NoError(t, err)
				require.Equal(t, "2", fresh.Value)
			}
		})
	}
}

// A new leader proves it leads (VerifyLeader: one heartbeat round) long
// before it has committed an entry of its own term and applied what its
// predecessor committed. With slow disks the window is wide: verify reads
// there miss the last acknowledged write; readindex reads wait it out.
func TestLabVerifyReadsOnNewLeader(t *testing.T) {
	cases := []struct {
		mode         ReadMode
		linearizable bool
	}{
		{ReadVerify, false},
		{ReadIndex, true},
		{ReadLog, true},
	}
	// run crashes a leader right after an acknowledged write and reads from
	// the new one: whether the read was linearizable, its verdict and value.
	run := func(t *testing.T, mode ReadMode) (bool, string, string) {
		cfg := labConfig(3)
		cfg.Storage = StorageSimFsync
		cfg.FsyncLatency = 25 * time.Millisecond
		c := startLab(t, cfg)
		ctx := context.Background()
		old, _ := leaderAndFollower(t, c)
		cl := c.NewClient(old)
		_, err := cl.Put(ctx, "x", "1")
		require.NoError(t, err)
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		require.NoError(t, c.WaitApplied(wctx, c.current(old).fsm.appliedIndex()))
		_, err = cl.Put(ctx, "x", "2")
		require.NoError(t, err)
		// Crash before the followers hear that x=2 committed.
		require.NoError(t, c.Crash(old))
		nl, err := c.WaitNewLeader(wctx, old)
		require.NoError(t, err)
		r, err := c.NewClient(nl).Get(ctx, "x", mode)
		require.NoError(t, err)
		res := c.Check(10 * time.Second)
		return res.Linearizable, string(res.Verdict), r.Value
	}
	for _, tc := range cases {
		t.Run(string(tc.mode), func(t *testing.T) {
			lin, verdict, value := run(t, tc.mode)
			// The stale verify read needs the read to land in the window
			// before the new leader applies its predecessor's commit; on a
			// loaded machine the read can come after it (it read "2" once
			// under a CPU hog). The claim is that it can miss, so up to three
			// crashes; the linearizable modes must hold every time.
			for try := 1; !tc.linearizable && lin && try < 3; try++ {
				lin, verdict, value = run(t, tc.mode)
			}
			require.Equal(t, tc.linearizable, lin, "verdict %s, read %q", verdict, value)
		})
	}
}
