package sembench

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/bench/benchtest"
)

func tiny() Options {
	return Options{Limits: []int{1, 2}, Duration: 300 * time.Millisecond, Handoffs: 3, Hold: time.Millisecond, NoFsync: true}
}

func TestValidate(t *testing.T) {
	require.NoError(t, tiny().Validate())
	for name, mod := range map[string]func(*Options){
		"no limits":      func(o *Options) { o.Limits = nil },
		"zero limit":     func(o *Options) { o.Limits = []int{0} },
		"too high limit": func(o *Options) { o.Limits = []int{65} },
		"zero duration":  func(o *Options) { o.Duration = 0 },
		"no handoffs":    func(o *Options) { o.Handoffs = 0 },
		"negative hold":  func(o *Options) { o.Hold = -time.Millisecond },
	} {
		t.Run(name, func(t *testing.T) {
			o := tiny()
			mod(&o)
			_, err := Run(context.Background(), o)
			require.ErrorIs(t, err, ErrOptions)
		})
	}
}

// A tiny run: every metric measured, etcd's column only where it applies;
// not performance.
func TestRunTiny(t *testing.T) {
	var progress bytes.Buffer
	o := tiny()
	o.Progress = &progress
	res, err := Run(context.Background(), o)
	require.NoError(t, err)
	require.Equal(t, "sem", res.Benchmark)
	var metrics []string
	for _, r := range res.Rows {
		metrics = append(metrics, r.Metric)
		benchtest.PositiveOrRate(t, r.Metric, r.Unit, r.Coordkit)
		if r.Metric == "limit_2_acq_per_s" {
			require.Nil(t, r.EtcdConcurrency, r.Metric)
		} else {
			require.NotNil(t, r.EtcdConcurrency, r.Metric)
			benchtest.PositiveOrRate(t, r.Metric, r.Unit, *r.EtcdConcurrency)
		}
	}
	require.Equal(t, []string{"limit_1_acq_per_s", "limit_2_acq_per_s", "handoff_p50_ms", "handoff_p99_ms"}, metrics)
	require.Contains(t, progress.String(), "bench sem: starting embedded etcd")

	var out bytes.Buffer
	require.NoError(t, bench.WriteTable(&out, res.Table()))
	require.Contains(t, out.String(), "coordkit better by")
	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.Contains(t, string(b), `"etcd_concurrency":null`)
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := tiny()
	o.Duration = time.Hour
	time.AfterFunc(2*time.Second, cancel) // mid-run: the run lasts hours otherwise
	_, err := Run(ctx, o)
	require.ErrorIs(t, err, context.Canceled)
}
