package electbench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/bench"
)

func TestValidate(t *testing.T) {
	require.NoError(t, Options{Rounds: 1, CrashRounds: 1}.Validate())
	for name, o := range map[string]Options{
		"no rounds":         {Rounds: 0, CrashRounds: 1},
		"negative crashes":  {Rounds: 1, CrashRounds: -1},
		"zero crash rounds": {Rounds: 3},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Run(context.Background(), o)
			require.ErrorIs(t, err, ErrOptions)
		})
	}
}

// A short run: both implementations measured, every metric, in order.
func TestRunShort(t *testing.T) {
	var progress bytes.Buffer
	res, err := Run(context.Background(), Options{Rounds: 3, CrashRounds: 1, Progress: &progress})
	require.NoError(t, err)
	require.Contains(t, progress.String(), "bench elect: etcd_concurrency: 1 crash failovers")
	require.Equal(t, "elect", res.Benchmark)
	var metrics []string
	for _, r := range res.Rows {
		metrics = append(metrics, r.Metric)
		require.Equal(t, "ms", r.Unit)
		require.Positive(t, r.Coordkit, r.Metric)
		require.Positive(t, r.EtcdConcurrency, r.Metric)
		if r.Metric == "crash_failover_ttl2_ms" {
			// The lease must expire on the server: at least TTL − one keepalive interval.
			require.Greater(t, r.Coordkit, 1000.0)
			require.Greater(t, r.EtcdConcurrency, 1000.0)
		}
	}
	require.Equal(t, []string{"handover_p50_ms", "handover_p99_ms", "handover_queued_200ms_p50_ms", "crash_failover_ttl2_ms"}, metrics)
	// The -w json contract (coordctl bench elect prints this form).
	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.Contains(t, string(b), `"benchmark":"elect"`)
	require.Equal(t, len(res.Rows), strings.Count(string(b), `"etcd_concurrency":`))

	var out bytes.Buffer
	require.NoError(t, bench.WriteTable(&out, res.Table()))
	require.True(t, strings.HasPrefix(out.String(), "metric "), out.String())
	require.Equal(t, len(res.Rows)+1, strings.Count(out.String(), "\n"))
}

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
	_, err := Run(ctx, Options{Rounds: 1_000_000, CrashRounds: 1_000_000,
		Progress: &cancelOn{what: "handovers to a candidate that just queued", cancel: cancel}})
	require.ErrorIs(t, err, context.Canceled)
}
