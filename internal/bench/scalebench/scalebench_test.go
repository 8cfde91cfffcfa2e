package scalebench

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

func TestValidate(t *testing.T) {
	require.NoError(t, DefaultOptions().Validate())
	require.NoError(t, QuickOptions().Validate())
	for name, mut := range map[string]func(*Options){
		"waiters 0":         func(o *Options) { o.Waiters = []int{0} },
		"members 2":         func(o *Options) { o.Members = []int{2} },
		"no members":        func(o *Options) { o.Members = nil },
		"one candidate":     func(o *Options) { o.Shapes = []Shape{{1, 1}} },
		"sessions>workers":  func(o *Options) { o.Sessions = o.Workers + 1 },
		"no handoffs":       func(o *Options) { o.Handoffs = 0 },
		"ttl below 1s":      func(o *Options) { o.TTL = 500 * time.Millisecond },
		"negative hold":     func(o *Options) { o.Hold = -time.Millisecond },
		"zero lock runtime": func(o *Options) { o.Duration = 0 },
	} {
		t.Run(name, func(t *testing.T) {
			o := DefaultOptions()
			mut(&o)
			_, err := Run(context.Background(), o)
			require.ErrorIs(t, err, ErrOptions)
		})
	}
}

func TestParseShape(t *testing.T) {
	s, err := ParseShape("100x5")
	require.NoError(t, err)
	require.Equal(t, Shape{100, 5}, s)
	for _, bad := range []string{"", "5", "x5", "1x", "1x5x", "1 x 5"} {
		_, err := ParseShape(bad)
		require.ErrorIs(t, err, ErrOptions, bad)
	}
}

func TestValueJSON(t *testing.T) {
	b, err := json.Marshal([]Value{1.5, nan, Value(math.Inf(1))})
	require.NoError(t, err)
	require.Equal(t, "[1.5,null,null]", string(b))
	var back []Value
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, 1.5, float64(back[0]))
	require.True(t, math.IsNaN(float64(back[1])))
}

// leftBehind counts keys under the bench's names and leases on the server.
func leftBehind(t *testing.T, cli *clientv3.Client) (keys int64, leases int) {
	t.Helper()
	ctx := context.Background()
	keys, err := countKeys(ctx, cli, "bench/scale/")
	require.NoError(t, err)
	leases, err = countLeases(ctx, cli)
	require.NoError(t, err)
	return keys, leases
}

// No herd: with 50 waiters queued, a release wakes one waiter (its
// successor), never more, and the run leaves no key and no lease behind.
func TestQueueNoHerd(t *testing.T) {
	t.Parallel() // an etcd of its own
	srv, cli := etcdtest.StartWithClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const handoffs = 15
	q, err := measureQueue(ctx, srv.Endpoints(), 50, handoffs)
	require.NoError(t, err)
	require.Equal(t, handoffs, q.Releases)
	require.Zero(t, q.HerdReleases, "releases that woke more than one waiter")
	// At most one waiter per release, and the count is live: a release
	// wakes nobody only when its successor had not started waiting yet
	// (it then takes the lock on its first look), which 50 deep takes a
	// starved goroutine.
	require.EqualValues(t, 1, q.MaxWakeups, "most waiters one release woke")
	require.GreaterOrEqual(t, q.Wakeups, q.Releases/2)
	require.LessOrEqual(t, q.Wakeups, q.Releases)
	keys, leases := leftBehind(t, cli)
	require.Zero(t, keys, "keys left behind")
	require.Zero(t, leases, "leases left behind")
}

// Goroutines per held lock do not depend on how many names the loop went
// through, and the run leaves no key and no lease behind.
//
// Not parallel: it counts the process's goroutines, which the other
// tests' clients and servers would change under it.
func TestLocksGoroutinesConstant(t *testing.T) {
	srv, cli := etcdtest.StartWithClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var per []float64
	for _, l := range []int{10, 1000} {
		r, err := measureLocks(ctx, srv.Endpoints(), l, 16, 4, 3)
		require.NoError(t, err)
		require.EqualValues(t, 16*3, r.Acquired, "L=%d", l)
		require.Zero(t, r.KeysAfter, "L=%d: keys left behind", l)
		require.Zero(t, r.LeasesAfter, "L=%d: leases left behind", l)
		per = append(per, r.GoroutinesPerHeldLock)
	}
	// A stray keepalive stream during the count adds 1/16; a goroutine kept
	// per name or per acquisition would add whole goroutines.
	require.Equal(t, math.Round(per[0]), math.Round(per[1]), "goroutines per held lock at L=10 and L=1000: %v", per)
	require.LessOrEqual(t, math.Round(per[0]), float64(GoroutinesPerHeldLock), "per held lock: %v", per)
	keys, leases := leftBehind(t, cli)
	require.Zero(t, keys)
	require.Zero(t, leases)
}

// The tables: one per curve and cluster size, then the targets.
func TestTables(t *testing.T) {
	res := Result{Benchmark: "scale", Fsync: true, Rows: []Row{
		{Curve: CurveQueue, Members: 1, Point: "W=1", X: 1, Metric: "handoff_p50_ms", Coordkit: 2, EtcdConcurrency: 50, Unit: "ms"},
		{Curve: CurveQueue, Members: 1, Point: "W=10", X: 10, Metric: "handoff_p50_ms", Coordkit: 3, EtcdConcurrency: 60, Unit: "ms"},
		{Curve: CurveCandidates, Members: 1, Point: "1x5", X: 5, Metric: "failover_max_ms", Coordkit: 2500, EtcdConcurrency: nan, Unit: "ms"},
		{Curve: CurveQueue, Members: 3, Point: "W=1", X: 1, Metric: "handoff_p50_ms", Coordkit: 4, EtcdConcurrency: 70, Unit: "ms"},
	}}
	o := DefaultOptions()
	o.Waiters, o.Locks, o.Shapes, o.IdleSessions, o.KeepAlive = []int{1, 10}, nil, []Shape{{1, 5}}, nil, KeepAliveStream
	res.Targets = targets(res, o)
	ts := res.Tables()
	require.Len(t, ts, 4)
	require.Equal(t, []string{"coordkit", "etcd_concurrency"}, ts[0].Columns)
	require.Equal(t, []string{"coordkit"}, ts[1].Columns, "candidates: coordkit only")
	require.Contains(t, ts[2].Title, "3-member")
	for _, tb := range ts {
		var b jsonlessWriter
		require.NoError(t, bench.WriteTable(&b, tb))
	}
	require.Len(t, res.Targets, 4, "with the idle keepalive streams of the candidates")
	require.Equal(t, 1.5, float64(res.Targets[0].Measured))
	require.True(t, res.Targets[0].Met)
	require.True(t, res.Targets[2].Met, "2500ms within TTL 2s + 1s")
}

type jsonlessWriter struct{ n int }

func (w *jsonlessWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// Candidates: every crash of a leader hands its election to another
// candidate, and the curve leaves no key behind.
func TestCandidatesFailover(t *testing.T) {
	t.Parallel() // an etcd of its own
	srv, cli := etcdtest.StartWithClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := DefaultOptions()
	o.TTL, o.Crashes = 2*time.Second, 2
	r := &runner{o: o}
	e := &env{endpoints: srv.Endpoints(), members: 1}
	defer e.closeClients()
	require.NoError(t, r.candidatesCurve(ctx, e, Shape{Elections: 2, Candidates: 3}, false))
	got := map[string]float64{}
	for _, row := range r.res.Rows {
		require.Equal(t, "2x3", row.Point)
		got[row.Metric] = float64(row.Coordkit)
	}
	// A crashed leader's key stays until its lease expires on the server:
	// the failover cannot be shorter than that lease's remaining TTL, at
	// least TTL - the keepalive interval (TTL/3).
	require.GreaterOrEqual(t, got["failover_p50_ms"], float64(2*time.Second/3/time.Millisecond))
	require.GreaterOrEqual(t, got["failover_max_ms"], got["failover_p50_ms"])
	require.Equal(t, 9.0, got["keepalives_model_per_s"], "3 x 6 sessions / 2s")
	keys, err := countKeys(ctx, cli, "bench/scale/")
	require.NoError(t, err)
	require.Zero(t, keys)
}

// The candidates curve says how much churn its steady window had: a
// window with campaigns in it is measured again (at most idleTries).
func TestCandidatesReportWindowChurn(t *testing.T) {
	t.Parallel() // an etcd of its own
	srv := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := DefaultOptions()
	o.TTL, o.Crashes = 2*time.Second, 1
	r := &runner{o: o}
	e := &env{endpoints: srv.Endpoints(), members: 1}
	defer e.closeClients()
	require.NoError(t, r.candidatesCurve(ctx, e, Shape{Elections: 1, Candidates: 3}, false))
	got := map[string]float64{}
	for _, row := range r.res.Rows {
		got[row.Metric] = float64(row.Coordkit)
	}
	require.Contains(t, got, "churn_campaigns_in_window")
	tries := got["idle_windows_measured"]
	require.GreaterOrEqual(t, tries, 1.0)
	require.LessOrEqual(t, tries, float64(idleTries))
	if got["churn_campaigns_in_window"] > 0 {
		require.Equal(t, float64(idleTries), tries, "a window with churn is measured again until the last try")
	}
}

// The lone keepalive costs: one session per client, on a stream and with
// KeepAliveOnce, each with its rate and CPU per keepalive.
func TestLoneKeepalives(t *testing.T) {
	t.Parallel() // an etcd of its own
	srv := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := &runner{o: DefaultOptions()}
	e := &env{endpoints: srv.Endpoints(), members: 1}
	defer e.closeClients()
	got := map[string]float64{}
	require.NoError(t, r.loneKeepalives(ctx, e, func(metric, _ string, v float64) { got[metric] = v }))
	for _, m := range []string{"lone_keepalives_per_s_stream", "lone_cpu_us_per_keepalive_gross_stream", "lone_keepalives_per_s_once", "lone_cpu_us_per_keepalive_gross_once"} {
		require.Positive(t, got[m], m)
	}
}

// With both keepalive paths, the KeepAliveOnce run's rows become the
// keepalive_once column of the stream run's, and the table shows it with a
// ratio.
func TestEachKeepAliveMergesTheOnceColumn(t *testing.T) {
	r := &runner{o: Options{KeepAlive: KeepAliveBoth}}
	require.NoError(t, r.eachKeepAlive(func(once bool) error {
		v := Value(10)
		if once {
			v = 50
			r.add(Row{Curve: CurveSessions, Members: 1, Point: "N=5", Metric: "only_once", Coordkit: 7, EtcdConcurrency: nan, Unit: "us"})
		}
		r.add(Row{Curve: CurveSessions, Members: 1, Point: "N=5", Metric: "cpu_us_per_keepalive", Coordkit: v, EtcdConcurrency: nan, Unit: "us"})
		return nil
	}))
	require.Len(t, r.res.Rows, 2)
	require.Equal(t, 10.0, r.res.Value(CurveSessions, 1, "N=5", "cpu_us_per_keepalive", 0))
	require.Equal(t, 50.0, r.res.Value(CurveSessions, 1, "N=5", "cpu_us_per_keepalive", 2))
	require.True(t, math.IsNaN(r.res.Value(CurveSessions, 1, "N=5", "only_once", 0)))
	require.Equal(t, 7.0, r.res.Value(CurveSessions, 1, "N=5", "only_once", 2))
	ts := r.res.Tables()
	require.Len(t, ts, 1)
	require.Equal(t, []string{"coordkit", "keepalive_once"}, ts[0].Columns)
	var b jsonlessWriter
	require.NoError(t, bench.WriteTable(&b, ts[0]))
	b2, err := json.Marshal(r.res.Rows[0])
	require.NoError(t, err)
	require.Contains(t, string(b2), `"keepalive_once":50`)
}
