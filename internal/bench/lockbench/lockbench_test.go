package lockbench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/bench/benchtest"
	"github.com/coordkit/coordkit/internal/nettest"
	"github.com/coordkit/coordkit/internal/redislock"
	"github.com/coordkit/coordkit/internal/redislock/redistest"
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
		"against nosuch":   func(o *Options) { o.Against = []string{"nosuch"} },
		"redsync, no addr": func(o *Options) { o.Against = []string{AgainstRedsync} },
		"addr, no redsync": func(o *Options) { o.Redis = "127.0.0.1:6379" },
		"pg, no dsn":       func(o *Options) { o.Against = []string{AgainstPG} },
		"dsn, no pg":       func(o *Options) { o.DSN = "postgres://127.0.0.1/x" },
		"negative crashes": func(o *Options) { o.CrashHandoffs = -1 },
		"api, no python":   func(o *Options) { o.Against = []string{AgainstAPI} },
		"python, no api":   func(o *Options) { o.Python = "/usr/bin/python3" },
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
	t.Parallel() // each run starts an etcd of its own
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
		require.Nil(t, r.Redsync, "no redsync columns unless against it")
		require.Nil(t, r.RedsyncMinRetry)
		if r.Unit == "requests" {
			checkRequests(t, r)
			continue
		}
		benchtest.PositiveOrRate(t, r.Metric, r.Unit, r.Coordkit)
		benchtest.PositiveOrRate(t, r.Metric, r.Unit, r.EtcdConcurrency)
	}
	require.Equal(t, []string{"uncontended_p50_ms", "uncontended_kv_requests_per_op", "uncontended_watch_requests_per_op",
		"handoff_p50_ms", "handoff_p99_ms", "contended_2_per_s", "contended_3_per_s"}, metrics)
	require.Contains(t, progress.String(), "uncontended, etcd concurrency: requests per lock+unlock: DeleteRange 1.00, Txn 1.00")
	require.Contains(t, progress.String(), "bench lock: starting embedded etcd")
	// The -w json contract (coordctl bench lock prints this form).
	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.Contains(t, string(b), `"fsync":false`)
	require.Contains(t, string(b), `"etcd_concurrency":`)
	require.NotContains(t, string(b), "redsync", "without Against the form is as before")

	checkBreakdown(t, res, progress.String())
	require.Contains(t, string(b), `"uncontended_breakdown":[{"step":"bare_concurrency_requests","p50_ms":`)

	tab := res.Table()
	require.Equal(t, []string{"coordkit", "etcd_concurrency"}, tab.Columns)
	require.Len(t, tab.Rows, len(res.Rows))
	var out bytes.Buffer
	require.NoError(t, bench.WriteTable(&out, tab))
	require.Contains(t, out.String(), "fsync OFF")
	require.Contains(t, out.String(), "coordkit better by")

	out.Reset()
	require.NoError(t, res.Printed().WriteSimple(&out))
	require.Contains(t, out.String(), "coordkit better by", "the table first")
	require.Regexp(t, `(?m)^uncontended lock\+unlock by what it sends`, out.String(), "then the breakdown")
	require.Regexp(t, `(?m)^plus_loss_watch +[0-9.]+ +-?[0-9.]+ +2\.00 +[0-9.]+$`, out.String())
}

// checkBreakdown checks the uncontended breakdown of a run: its steps in
// order, then the two libraries; each added_ms is what its p50 has over
// the step it builds on; the steps send what they say (the counts that do
// not depend on the load: the first sends exactly what concurrency.Mutex
// sends, the next ones a Txn each way and no watch).
func checkBreakdown(t *testing.T, res Result, progress string) {
	t.Helper()
	var steps []string
	p50 := map[string]float64{}
	for _, r := range res.Breakdown {
		steps = append(steps, r.Step)
		p50[r.Step] = r.P50Ms
		require.Positive(t, r.P50Ms, r.Step)
	}
	require.Equal(t, []string{"bare_concurrency_requests", "plus_coordkit_acquire_txn", "plus_loss_watch", "plus_compare_and_delete",
		"concurrency_mutex_library", "coordkit_library"}, steps)
	before := map[string]string{"bare_concurrency_requests": "bare_concurrency_requests", "plus_coordkit_acquire_txn": "bare_concurrency_requests",
		"plus_loss_watch": "plus_coordkit_acquire_txn", "plus_compare_and_delete": "plus_loss_watch",
		"concurrency_mutex_library": "bare_concurrency_requests", "coordkit_library": "plus_coordkit_acquire_txn"}
	for _, r := range res.Breakdown {
		require.InDelta(t, r.P50Ms-p50[before[r.Step]], r.AddedMs, 1e-9, r.Step)
		switch r.Step {
		case "coordkit_library": // and the loss watch's read, when a hold outlasted its delay (see checkRequests)
			require.GreaterOrEqual(t, r.KVRequestsPerOp, 2.0, r.Step)
		default:
			require.Equal(t, 2.0, r.KVRequestsPerOp, r.Step)
		}
		if r.Step != "plus_loss_watch" && r.Step != "plus_compare_and_delete" && r.Step != "coordkit_library" {
			require.Zero(t, r.WatchRequestsPerOp, r.Step)
		}
	}
	require.Equal(t, res.Rows[0].EtcdConcurrency, p50["concurrency_mutex_library"], "the library rows are the table's uncontended_p50_ms")
	require.Equal(t, res.Rows[0].Coordkit, p50["coordkit_library"])
	require.Contains(t, progress, "bench lock: breakdown step plus_compare_and_delete: + the release as a compare-and-delete Txn (a lock on a shared session)\n")
	for _, st := range []string{"bare_concurrency_requests", "plus_coordkit_acquire_txn", "plus_loss_watch"} {
		require.Contains(t, progress, "uncontended, breakdown step "+st+": requests per lock+unlock: DeleteRange 1.00, Txn 1.00", "a plain delete")
	}
	require.Contains(t, progress, "uncontended, breakdown step plus_compare_and_delete: requests per lock+unlock: Txn 2.00", "a compare-and-delete, not a DeleteRange")
}

// checkRequests checks a row of requests per uncontended lock+unlock, as
// far as it does not depend on the load: concurrency.Mutex makes exactly
// one Txn and one DeleteRange and no watch; coordkit at least its two
// writes (its loss watch, started primitive.LossWatchDelay into a hold,
// adds a watch create and cancel and a read when a hold lasts that long:
// how often depends on the load).
func checkRequests(t *testing.T, r Row) {
	t.Helper()
	switch r.Metric {
	case "uncontended_kv_requests_per_op":
		require.Equal(t, 2.0, r.EtcdConcurrency, r.Metric)
		require.GreaterOrEqual(t, r.Coordkit, 2.0, r.Metric)
	case "uncontended_watch_requests_per_op":
		require.Zero(t, r.EtcdConcurrency, r.Metric)
		require.GreaterOrEqual(t, r.Coordkit, 0.0, r.Metric)
	default:
		t.Fatalf("unexpected requests row %s", r.Metric)
	}
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
	t.Parallel() // each run starts an etcd of its own
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := tiny()
	o.Handoffs = 1_000_000
	o.Progress = &cancelOn{what: "handoff between two clients", cancel: cancel}
	_, err := Run(ctx, o)
	require.ErrorIs(t, err, context.Canceled)
}

func TestRunRedisUnreachable(t *testing.T) {
	addr := nettest.ClosedAddr(t)
	o := tiny()
	o.Against, o.Redis = []string{AgainstRedsync}, addr
	var progress bytes.Buffer
	o.Progress = &progress
	_, err := Run(context.Background(), o)
	require.ErrorIs(t, err, redislock.ErrUnreachable)
	require.Contains(t, err.Error(), addr)
	require.NotContains(t, progress.String(), "starting embedded etcd", "fails before starting etcd")
}

// A tiny run against redsync on the test Redis: the columns and rows are
// there, the values positive where they must be, the keys gone; not
// performance.
func TestRunAgainstRedsync(t *testing.T) {
	t.Parallel() // each run starts an etcd of its own
	c, ks := redistest.Client(t, "bench-lock-test")
	o := tiny()
	o.Against, o.Redis, o.RedisKeyspace = []string{AgainstRedsync}, c.Options().Addr, ks
	var progress bytes.Buffer
	o.Progress = &progress
	res, err := Run(context.Background(), o)
	require.NoError(t, err)
	require.Equal(t, c.Options().Addr, res.Redis)
	require.Contains(t, progress.String(), "deleted at the end")
	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.Contains(t, string(b), `"redis":"`+c.Options().Addr+`"`)
	for _, k := range []string{`"coordkit":`, `"etcd_concurrency":`, `"redsync":`, `"redsync_min_retry":`} {
		require.Equal(t, len(res.Rows), strings.Count(string(b), k), "every row has %s", k)
	}
	var metrics []string
	for _, r := range res.Rows {
		metrics = append(metrics, r.Metric)
		require.NotNil(t, r.Redsync, r.Metric)
		require.NotNil(t, r.RedsyncMinRetry, r.Metric)
		if r.Unit == "requests" {
			checkRequests(t, r)
			require.True(t, math.IsNaN(*r.Redsync), "no etcd requests to count for redsync")
			continue
		}
		if r.Unit == "count" {
			require.Zero(t, r.Coordkit, "coordkit's Lock waits, it does not give up")
			require.Zero(t, r.EtcdConcurrency)
			require.GreaterOrEqual(t, *r.Redsync, 0.0)
			require.GreaterOrEqual(t, *r.RedsyncMinRetry, 0.0)
			continue
		}
		benchtest.PositiveOrRate(t, r.Metric, r.Unit, r.Coordkit)
		benchtest.PositiveOrRate(t, r.Metric, r.Unit, r.EtcdConcurrency)
		if r.Unit == "ms" { // a few contended handoffs may be none for redsync
			require.Positive(t, *r.Redsync, r.Metric)
			require.Positive(t, *r.RedsyncMinRetry, r.Metric)
		}
	}
	require.Equal(t, []string{"uncontended_p50_ms", "uncontended_kv_requests_per_op", "uncontended_watch_requests_per_op",
		"handoff_p50_ms", "handoff_p99_ms", "contended_2_per_s", "contended_2_lock_failed", "contended_3_per_s", "contended_3_lock_failed"}, metrics)
	keys, err := ks.Keys(context.Background(), c)
	require.NoError(t, err)
	require.Empty(t, keys, "the run deleted its keys")

	tab := res.Table()
	require.Equal(t, []string{"coordkit", "etcd_concurrency", "redsync", "redsync_min_retry"}, tab.Columns)
	var out bytes.Buffer
	require.NoError(t, bench.WriteTable(&out, tab))
	require.Contains(t, out.String(), "coordkit better than redsync by")
	require.Contains(t, out.String(), "retry delay 0")
}
