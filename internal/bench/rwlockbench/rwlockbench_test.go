package rwlockbench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/bench/benchtest"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

func tiny() Options {
	return Options{Batches: 3, Readers: 3, Handoffs: 3, Duration: 300 * time.Millisecond, Hold: time.Millisecond, NoFsync: true}
}

func TestValidate(t *testing.T) {
	require.NoError(t, tiny().Validate())
	for name, mod := range map[string]func(*Options){
		"no batches":       func(o *Options) { o.Batches = 0 },
		"no readers":       func(o *Options) { o.Readers = 0 },
		"too many readers": func(o *Options) { o.Readers = 65 },
		"no handoffs":      func(o *Options) { o.Handoffs = 0 },
		"zero duration":    func(o *Options) { o.Duration = 0 },
		"negative hold":    func(o *Options) { o.Hold = -time.Millisecond },
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
	require.Equal(t, "rwlock", res.Benchmark)
	require.False(t, res.Fsync)
	var metrics []string
	for _, r := range res.Rows {
		metrics = append(metrics, r.Metric)
		benchtest.PositiveOrRate(t, r.Metric, r.Unit, r.Coordkit)
		benchtest.PositiveOrRate(t, r.Metric, r.Unit, r.EtcdRecipes)
	}
	require.Equal(t, []string{"read_batch_admit_p50_ms", "read_batch_admit_p99_ms", "writer_handoff_p50_ms",
		"writer_handoff_p99_ms", "mixed_8r2w_per_s", "mixed_8r2w_writes_per_s"}, metrics)
	require.Contains(t, progress.String(), "bench rwlock: starting embedded etcd")
	// The -w json contract (coordctl bench rwlock prints this form).
	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.Contains(t, string(b), `"fsync":false`)
	require.Equal(t, len(res.Rows), strings.Count(string(b), `"etcd_recipes":`))
	// Admission is measured from the writer's Unlock call: it cannot come
	// before the hold, whatever the load.
	var out bytes.Buffer
	require.NoError(t, bench.WriteTable(&out, res.Table()))
	require.Contains(t, out.String(), "coordkit better by")
}

// Cancelling mid-step ends it with ctx's error and leaves no goroutine
// behind (goleak in TestMain), even with the recipe, which takes no context
// and is unblocked by closing its clients.
func TestStepsCancelled(t *testing.T) {
	srv := etcdtest.Start(t)
	e := &env{bench.Clients{Endpoints: srv.Endpoints()}}
	defer e.CloseAll()
	steps := map[string]func(ctx context.Context, im impl) error{
		"read batches": func(ctx context.Context, im impl) error {
			_, err := readBatches(ctx, e, im, 1_000_000, 3, time.Millisecond)
			return err
		},
		"writer handoff": func(ctx context.Context, im impl) error {
			_, err := writerHandoff(ctx, e, im, 1_000_000, time.Millisecond)
			return err
		},
		"mixed": func(ctx context.Context, im impl) error {
			_, _, err := mixed(ctx, e, im, time.Hour)
			return err
		},
	}
	for name, step := range steps {
		for _, im := range impls {
			t.Run(name+"/"+im.label, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				// Mid-step: the step runs for ever unless cancelled.
				time.AfterFunc(300*time.Millisecond, cancel)
				require.ErrorIs(t, step(ctx, im), context.Canceled)
			})
		}
	}
}
