package lockbench

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/bench"
)

func tiny() Options {
	return Options{Iterations: 5, Handoffs: 3, Duration: 300 * time.Millisecond, Workers: []int{2, 3}, NoFsync: true}
}

func TestValidate(t *testing.T) {
	require.NoError(t, tiny().Validate())
	for name, mod := range map[string]func(*Options){
		"no iterations":    func(o *Options) { o.Iterations = 0 },
		"negative handoff": func(o *Options) { o.Handoffs = -1 },
		"zero duration":    func(o *Options) { o.Duration = 0 },
		"negative hold":    func(o *Options) { o.Hold = -time.Millisecond },
		"no workers":       func(o *Options) { o.Workers = nil },
		"one worker":       func(o *Options) { o.Workers = []int{1} },
		"too many workers": func(o *Options) { o.Workers = []int{257} },
	} {
		t.Run(name, func(t *testing.T) {
			o := tiny()
			mod(&o)
			_, err := Run(context.Background(), o)
			require.ErrorIs(t, err, ErrOptions)
		})
	}
}

// A tiny run: every metric measured for both, in order; not performance.
func TestRunTiny(t *testing.T) {
	var progress bytes.Buffer
	o := tiny()
	o.Progress = &progress
	res, err := Run(context.Background(), o)
	require.NoError(t, err)
	require.Equal(t, "lock", res.Benchmark)
	require.False(t, res.Fsync)
	var metrics []string
	for _, r := range res.Rows {
		metrics = append(metrics, r.Metric)
		require.Positive(t, r.Coordkit, r.Metric)
		require.Positive(t, r.EtcdConcurrency, r.Metric)
	}
	require.Equal(t, []string{"uncontended_p50_ms", "handoff_p50_ms", "handoff_p99_ms", "contended_2_per_s", "contended_3_per_s"}, metrics)
	require.Contains(t, progress.String(), "bench lock: starting embedded etcd")

	tab := res.Table()
	require.Equal(t, []string{"coordkit", "etcd_concurrency"}, tab.Columns)
	require.Len(t, tab.Rows, len(res.Rows))
	var out bytes.Buffer
	require.NoError(t, bench.WriteTable(&out, tab))
	require.Contains(t, out.String(), "fsync OFF")
	require.Contains(t, out.String(), "coordkit better by")
}

// cancelOn cancels when a progress line contains what.
type cancelOn struct {
	mu     sync.Mutex
	what   string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if strings.Contains(string(p), c.what) {
		c.cancel()
	}
	return len(p), nil
}

func TestRunStopsWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := tiny()
	o.Handoffs = 1_000_000
	o.Progress = &cancelOn{what: "handoff between two clients, coordkit", cancel: cancel}
	_, err := Run(ctx, o)
	require.ErrorIs(t, err, context.Canceled)
}
