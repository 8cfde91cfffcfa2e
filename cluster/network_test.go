package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLabNetworkPartitionDropsExactlyCrossLinks(t *testing.T) {
	nw := newNetwork(5, LinkConfig{}, 1)
	defer nw.close()
	c := &Cluster{cfg: Config{Nodes: 5}, nw: nw, timeline: &timeline{now: func() int64 { return 0 }}}
	groups, err := ParseGroups("1,2|3,4,5")
	require.NoError(t, err)
	require.NoError(t, c.Partition(groups...))
	side := map[NodeID]int{1: 0, 2: 0, 3: 1, 4: 1, 5: 1}

	var got [6][6]atomic.Int32
	var wg sync.WaitGroup
	for i := NodeID(1); i <= 5; i++ {
		for j := NodeID(1); j <= 5; j++ {
			if i == j {
				continue
			}
			if side[i] == side[j] {
				wg.Add(1)
			}
			queued := nw.send(i, j, func() { got[i][j].Add(1); wg.Done() })
			// A cross link drops at send time, so nothing is left in
			// flight to arrive later: no need to wait and see.
			require.Equal(t, side[i] == side[j], queued, "link %d→%d", i, j)
		}
	}
	wg.Wait()
	for i := NodeID(1); i <= 5; i++ {
		for j := NodeID(1); j <= 5; j++ {
			if i == j {
				continue
			}
			want := int32(0)
			if side[i] == side[j] {
				want = 1
			}
			require.Equal(t, want, got[i][j].Load(), "link %d→%d", i, j)
			require.Equal(t, side[i] == side[j], nw.connected(i, j))
			st := nw.linkStats(i, j)
			require.Equal(t, LinkStats{Sent: 1, Delivered: int64(want), Dropped: int64(1 - want)}, st, "link %d→%d", i, j)
		}
	}
	// One-way cut: 1→2 dropped, 2→1 delivered.
	c.Heal()
	require.NoError(t, c.Cut(1, 2))
	require.False(t, nw.send(1, 2, func() { t.Error("delivered over a cut link") }))
	arrived := make(chan struct{})
	require.True(t, nw.send(2, 1, func() { close(arrived) }))
	<-arrived
	require.False(t, nw.connected(1, 2))
	require.Error(t, c.Partition([]NodeID{1}, []NodeID{9}))
}

func TestLabNetworkDelayJitterFIFO(t *testing.T) {
	cases := []struct {
		name          string
		delay, jitter time.Duration
	}{
		{"delay 20ms", 20 * time.Millisecond, 0},
		{"delay 10ms jitter 5ms", 10 * time.Millisecond, 5 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nw := newNetwork(2, LinkConfig{Delay: tc.delay, Jitter: tc.jitter}, 7)
			defer nw.close()
			const n = 50
			var mu sync.Mutex
			var order []int
			var lat []time.Duration
			var wg sync.WaitGroup
			wg.Add(n)
			for i := 0; i < n; i++ {
				sent := time.Now()
				nw.send(1, 2, func() {
					mu.Lock()
					order = append(order, i)
					lat = append(lat, time.Since(sent))
					mu.Unlock()
					wg.Done()
				})
				time.Sleep(time.Millisecond / 2)
			}
			wg.Wait()
			for i := range order {
				require.Equal(t, i, order[i], "per-link FIFO")
			}
			// No message arrives early. How late one may arrive depends on
			// the machine's load, so it is not asserted here.
			for _, l := range lat {
				require.GreaterOrEqual(t, l, tc.delay-tc.jitter)
			}
		})
	}
}

func TestLabNetworkLossIsSeeded(t *testing.T) {
	count := func(seed int64) int {
		nw := newNetwork(2, LinkConfig{Loss: 0.3}, seed)
		defer nw.close()
		dropped := 0
		for i := 0; i < 1000; i++ {
			if !nw.send(1, 2, func() {}) {
				dropped++
			}
		}
		return dropped
	}
	a, b := count(42), count(42)
	require.Equal(t, a, b, "same seed, same losses")
	require.InDelta(t, 300, a, 60)
}

// A slow link does not hold up another: a message 1→3 arrives while 1→2
// still carries one with an hour's delay. An order, not a time window.
func TestLabNetworkSlowLinkDoesNotBlockOthers(t *testing.T) {
	nw := newNetwork(3, LinkConfig{}, 1)
	defer nw.close() // discards the slow message
	nw.setLink(1, 2, func(l *LinkConfig) { l.Delay = time.Hour })
	slow := make(chan struct{})
	require.True(t, nw.send(1, 2, func() { close(slow) }))
	fast := make(chan struct{})
	require.True(t, nw.send(1, 3, func() { close(fast) }))
	<-fast
	select {
	case <-slow:
		t.Fatal("the slow message arrived first")
	default:
	}
}

// Measured through Raft: a write's latency grows with the link delay.
func TestLabWriteLatencyFollowsDelay(t *testing.T) {
	cfg := steadyConfig(3)
	cfg.Link.Delay = 10 * time.Millisecond
	c := startLab(t, cfg)
	l, _ := leaderAndFollower(t, c)
	cl := c.NewClient(l)
	var lats []time.Duration
	for i := 0; i < 10; i++ {
		r, err := cl.Put(context.Background(), "k", "v")
		require.NoError(t, err)
		lats = append(lats, r.Latency)
	}
	// leader → follower → leader: two one-way delays (in-memory storage).
	// Never faster than the two delays; how much slower depends on the
	// machine's load and is measured by coordctl bench lab, not here.
	for _, l := range lats {
		require.GreaterOrEqual(t, l, 2*cfg.Link.Delay)
	}
}
