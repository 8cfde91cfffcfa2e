package scalebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/etcdembed"
)

// Errors of the scalebench package. Match them with errors.Is.
var (
	// ErrOptions is returned by Run for options it cannot run with.
	ErrOptions = errors.New("scalebench: invalid options")
	// ErrNoCurve is returned by WriteSVG for a result with no curve to draw.
	ErrNoCurve = errors.New("scalebench: no curve to draw in the result")
)

// Shape is E elections of C candidates each.
type Shape struct {
	Elections, Candidates int
}

func (s Shape) String() string { return fmt.Sprintf("%dx%d", s.Elections, s.Candidates) }

// ParseShape reads "ExC", e.g. "1x500".
func ParseShape(s string) (Shape, error) {
	var sh Shape
	if _, err := fmt.Sscanf(s, "%dx%d", &sh.Elections, &sh.Candidates); err != nil || fmt.Sprintf("%dx%d", sh.Elections, sh.Candidates) != s {
		return Shape{}, fmt.Errorf("%w: shape %q: want ELECTIONSxCANDIDATES, e.g. 1x500", ErrOptions, s)
	}
	return sh, nil
}

// Options choose the points of each curve and bound the run.
type Options struct {
	Waiters  []int   // queue-depth points: waiters on one lock (1..5000)
	Locks    []int   // many-locks points: distinct lock names (1..100000)
	Shapes   []Shape // many-candidates points
	Members  []int   // cluster sizes the queue and lock curves run on (1 and/or 3); candidates run on the first
	Handoffs int     // handoffs measured per implementation and W
	Hold     time.Duration
	Duration time.Duration // length of each many-locks run
	Workers  int           // many-locks clients (64)
	Sessions int           // sessions (and connections) the workers share
	Crashes  int           // leader crashes per shape
	TTL      time.Duration // candidates' session TTL (2s)
	NoFsync  bool
	// NoCosts leaves the per-operation costs step out.
	NoCosts bool
	// SkipConcurrency leaves etcd's concurrency.Mutex out (faster; its
	// column is then null).
	SkipConcurrency bool
	// KeepAlive is how the candidates' and the idle sessions' keepalives
	// are sent: KeepAliveStream (one long-lived stream per client, what
	// sessions do), KeepAliveOnce (a KeepAliveOnce per keepalive, the old
	// path) or KeepAliveBoth (each point twice: the keepalive_once column);
	// empty is KeepAliveStream.
	KeepAlive string
	// IdleSessions are the idle-sessions points: N sessions on one client.
	IdleSessions []int
	IdleTTL      time.Duration // their TTL (10s)
	IdleDuration time.Duration // how long each point is measured (60s)
	// Progress receives one line per step ("bench scale: ..."); nil discards.
	Progress io.Writer
}

// DefaultOptions are the points of issue 16.
func DefaultOptions() Options {
	return Options{
		Waiters:  []int{1, 10, 100, 1000},
		Locks:    []int{10, 1000, 10000},
		Shapes:   []Shape{{1, 500}, {100, 5}},
		Members:  []int{1, 3},
		Handoffs: 50,
		Hold:     time.Millisecond,
		Duration: 5 * time.Second,
		Workers:  64,
		Sessions: 8,
		Crashes:  3,
		TTL:      2 * time.Second,

		KeepAlive:    KeepAliveBoth,
		IdleSessions: []int{10000},
		IdleTTL:      10 * time.Second,
		IdleDuration: 60 * time.Second,
	}
}

// Keepalive paths, the values of Options.KeepAlive.
const (
	KeepAliveStream = "stream"
	KeepAliveOnce   = "once"
	KeepAliveBoth   = "both"
)

// QuickOptions is a run of a few minutes on the same curves, fewer points.
func QuickOptions() Options {
	o := DefaultOptions()
	o.Waiters = []int{1, 10, 100}
	o.Locks = []int{10, 1000}
	o.Shapes = []Shape{{1, 50}, {10, 5}}
	o.Handoffs = 20
	o.Duration = 2 * time.Second
	o.Crashes = 1
	o.IdleSessions = []int{1000}
	o.IdleDuration = 10 * time.Second
	return o
}

// Validate reports the first option Run cannot use, wrapping ErrOptions.
func (o Options) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrOptions}, args...)...)
	}
	for _, w := range o.Waiters {
		if w < 1 || w > 5000 {
			return bad("waiters %d: want 1..5000", w)
		}
	}
	for _, l := range o.Locks {
		if l < 1 || l > 100000 {
			return bad("locks %d: want 1..100000", l)
		}
	}
	for _, s := range o.Shapes {
		if s.Elections < 1 || s.Candidates < 2 || s.Elections*s.Candidates > 5000 {
			return bad("shape %s: want at least one election of at least 2 candidates, at most 5000 candidates in all", s)
		}
	}
	for _, n := range o.IdleSessions {
		if n < 1 || n > 50000 {
			return bad("idle sessions %d: want 1..50000", n)
		}
	}
	for _, m := range o.Members {
		if m != 1 && m != 3 {
			return bad("members %d: want 1 or 3", m)
		}
	}
	switch {
	case len(o.Members) == 0:
		return bad("members: list at least one cluster size")
	case len(o.Waiters) > 0 && o.Handoffs < 1:
		return bad("handoffs %d: must be positive", o.Handoffs)
	case o.Hold < 0:
		return bad("hold %s: must not be negative", o.Hold)
	case len(o.Locks) > 0 && o.Duration <= 0:
		return bad("duration %s: must be positive", o.Duration)
	case len(o.Locks) > 0 && (o.Workers < 1 || o.Sessions < 1 || o.Sessions > o.Workers):
		return bad("workers %d, sessions %d: want 1 <= sessions <= workers", o.Workers, o.Sessions)
	case len(o.Shapes) > 0 && o.Crashes < 1:
		return bad("crashes %d: must be positive", o.Crashes)
	case len(o.Shapes) > 0 && o.TTL < time.Second:
		return bad("ttl %s: at least 1s", o.TTL)
	case len(o.IdleSessions) > 0 && o.IdleTTL < time.Second:
		return bad("idle ttl %s: at least 1s", o.IdleTTL)
	case len(o.IdleSessions) > 0 && o.IdleDuration <= 0:
		return bad("idle duration %s: must be positive", o.IdleDuration)
	case o.KeepAlive != "" && o.KeepAlive != KeepAliveStream && o.KeepAlive != KeepAliveOnce && o.KeepAlive != KeepAliveBoth:
		return bad("keepalive %q: want %s, %s or %s", o.KeepAlive, KeepAliveStream, KeepAliveOnce, KeepAliveBoth)
	}
	return nil
}

// Value is a measured number; NaN (not measured) is null in JSON.
type Value float64

// MarshalJSON writes NaN and infinities as null.
func (v Value) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// UnmarshalJSON reads null as NaN.
func (v *Value) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*v = Value(math.NaN())
		return nil
	}
	var f float64
	err := json.Unmarshal(b, &f)
	*v = Value(f)
	return err
}

var nan = Value(math.NaN())

// Curves, the values of Row.Curve.
const (
	CurveQueue      = "queue"
	CurveLocks      = "locks"
	CurveCandidates = "candidates"
	CurveSessions   = "sessions"
	CurveCosts      = "costs"
)

// Row is one metric at one point of one curve: the other benches' row
// (metric, coordkit, etcd_concurrency, unit) plus where it was measured.
type Row struct {
	Curve   string `json:"curve"`   // queue, locks, candidates, sessions, costs
	Members int    `json:"members"` // etcd cluster size
	Point   string `json:"point"`   // "W=1000", "L=10", "1x500"; empty for costs
	// X is the point's number: W, L, or candidates per election.
	X               float64 `json:"x"`
	Metric          string  `json:"metric"`
	Coordkit        Value   `json:"coordkit"`
	EtcdConcurrency Value   `json:"etcd_concurrency"` // null where not measured
	// KeepAliveOnce is the same metric with every keepalive a
	// KeepAliveOnce (Options.KeepAlive both or once); absent elsewhere.
	KeepAliveOnce *Value `json:"keepalive_once,omitempty"`
	Unit          string `json:"unit"`
}

// Target is one of issue 16's targets, judged on this run.
type Target struct {
	Name     string `json:"name"`
	Measured Value  `json:"measured"`
	Target   Value  `json:"target"`
	Unit     string `json:"unit"`
	// AtMost: the target is an upper bound (else a lower bound).
	AtMost bool `json:"at_most"`
	Met    bool `json:"met"`
}

// Result is the outcome of a run; its JSON form is coordctl bench scale's
// -w json contract.
type Result struct {
	Benchmark string   `json:"benchmark"` // "scale"
	Fsync     bool     `json:"fsync"`
	Rows      []Row    `json:"rows"`
	Targets   []Target `json:"targets"`
	Notes     []string `json:"notes,omitempty"`
}

// Value returns the coordkit (impl 0), etcd_concurrency (impl 1) or
// keepalive_once (impl 2) value of metric at a point, NaN when absent.
func (r Result) Value(curve string, members int, point, metric string, impl int) float64 {
	for _, row := range r.Rows {
		if row.Curve == curve && row.Members == members && row.Point == point && row.Metric == metric {
			switch {
			case impl == 0:
				return float64(row.Coordkit)
			case impl == 1:
				return float64(row.EtcdConcurrency)
			case row.KeepAliveOnce != nil:
				return float64(*row.KeepAliveOnce)
			}
		}
	}
	return math.NaN()
}

var curveTitles = map[string]string{
	CurveQueue:      "queue depth: one lock, W waiters, each with its own client and session (TTL 10s)",
	CurveLocks:      "many locks: L names taken and released in a loop by the workers, sharing sessions",
	CurveCandidates: "many candidates: E elections x C candidates (election package), leader crash at TTL",
	CurveSessions:   "idle sessions: N sessions on one client, keepalives only (coordkit: streams shared by the client's sessions; keepalive_once: a stream per keepalive)",
	CurveCosts:      "per-operation costs (1 member): the inputs of docs/scale.md's model",
}

// Tables are the result in the form every bench command prints: one table
// per curve and cluster size, then the targets.
func (r Result) Tables() []bench.Table {
	fsync := "fsync on"
	if !r.Fsync {
		fsync = "fsync OFF"
	}
	var out []bench.Table
	type key struct {
		curve   string
		members int
	}
	var order []key
	byKey := map[key][]Row{}
	for _, row := range r.Rows {
		k := key{row.Curve, row.Members}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], row)
	}
	for _, k := range order {
		rows := byKey[k]
		both := slices.ContainsFunc(rows, func(r Row) bool { return !math.IsNaN(float64(r.EtcdConcurrency)) })
		once := slices.ContainsFunc(rows, func(r Row) bool { return r.KeepAliveOnce != nil })
		t := bench.Table{
			Title:   fmt.Sprintf("%s; %d-member etcd, %s", curveTitles[k.curve], k.members, fsync),
			Columns: []string{"coordkit"},
		}
		if both {
			t.Columns = append(t.Columns, "etcd_concurrency")
			t.Ratios = append(t.Ratios, bench.Ratio{Of: "coordkit", To: "etcd_concurrency"})
		}
		if once {
			t.Columns = append(t.Columns, "keepalive_once")
			t.Ratios = append(t.Ratios, bench.Ratio{Of: "coordkit", To: "keepalive_once", Plain: true})
		}
		for _, row := range rows {
			m := row.Metric
			if row.Point != "" {
				m = row.Point + " " + m
			}
			vals := []float64{float64(row.Coordkit)}
			if both {
				vals = append(vals, float64(row.EtcdConcurrency))
			}
			if once {
				v := math.NaN()
				if row.KeepAliveOnce != nil {
					v = float64(*row.KeepAliveOnce)
				}
				vals = append(vals, v)
			}
			t.Add(m, row.Unit, vals...)
		}
		out = append(out, t)
	}
	if len(r.Targets) > 0 {
		t := bench.Table{Title: "targets (issues 16 and 20), judged on this run", Columns: []string{"measured", "target", "met"}}
		for _, g := range r.Targets {
			met := 0.0
			if g.Met {
				met = 1
			}
			name := g.Name + " (>=)"
			if g.AtMost {
				name = g.Name + " (<=)"
			}
			t.Add(name, g.Unit, float64(g.Measured), float64(g.Target), met)
		}
		out = append(out, t)
	}
	return out
}

// Run starts an embedded etcd per cluster size and measures the curves on
// it. It returns ErrOptions for invalid options and ctx's error, wrapped,
// when ctx ends first.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	r := &runner{o: o, res: Result{Benchmark: "scale", Fsync: !o.NoFsync}}
	r.res.Notes = append(r.res.Notes,
		"etcd runs in this process: cpu_percent, rss_max_mib and heap_per_waiter_kib are the whole process's (server and clients together)",
		"server figures (watchers, keys, keepalives, events, fsync) are etcd's own metrics from the registry it registers in; with 3 members in one process a gauge sums the members")
	for i, members := range o.Members {
		if err := r.onCluster(ctx, members, i == 0); err != nil {
			return Result{}, err
		}
	}
	r.res.Targets = targets(r.res, o)
	return r.res, nil
}

// runner is one Run.
type runner struct {
	o   Options
	res Result
}

func (r *runner) progress(format string, args ...any) {
	if r.o.Progress != nil {
		fmt.Fprintf(r.o.Progress, "bench scale: "+format+"\n", args...)
	}
}

func (r *runner) add(row Row) { r.res.Rows = append(r.res.Rows, row) }

// onCluster starts etcd with members members and runs the curves on it;
// the costs and candidates curves only on the first cluster.
func (r *runner) onCluster(ctx context.Context, members int, first bool) error {
	dir, err := os.MkdirTemp("", "coordctl-bench-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r.progress("starting a %d-member embedded etcd in %s (fsync %v)", members, dir, !r.o.NoFsync)
	var endpoints []string
	if members == 1 {
		srv, err := etcdembed.Start(ctx, etcdembed.Config{DataDir: dir, UnsafeNoFsync: r.o.NoFsync})
		if err != nil {
			return fmt.Errorf("scalebench: start etcd: %w", err)
		}
		defer srv.Close()
		endpoints = srv.Endpoints()
	} else {
		c, err := etcdembed.StartCluster(ctx, etcdembed.ClusterConfig{Size: members, DataDir: dir, UnsafeNoFsync: r.o.NoFsync})
		if err != nil {
			return fmt.Errorf("scalebench: start %d-member etcd: %w", members, err)
		}
		defer c.Close()
		endpoints = c.Endpoints()
	}
	e := &env{endpoints: endpoints, members: members}
	defer e.closeClients()
	if first && !r.o.NoCosts {
		if err := r.costs(ctx, e); err != nil {
			return fmt.Errorf("scalebench: costs: %w", err)
		}
	}
	if !r.o.NoCosts {
		if err := r.reads(ctx, e); err != nil {
			return fmt.Errorf("scalebench: costs: reads: %w", err)
		}
	}
	// A point that fails (etcd overloaded: "request timed out") is noted
	// and skipped; the run goes on with the next.
	point := func(what string, err error) error {
		if err == nil || ctx.Err() != nil {
			return err
		}
		r.progress("%s, %d members: FAILED, skipped: %v", what, members, err)
		r.res.Notes = append(r.res.Notes, fmt.Sprintf("%s on %d members failed and is missing: %v", what, members, err))
		return nil
	}
	for _, w := range r.o.Waiters {
		if err := point(fmt.Sprintf("queue %s", pointW(w)), r.queueCurve(ctx, e, w)); err != nil {
			return err
		}
	}
	for _, l := range r.o.Locks {
		if err := point(fmt.Sprintf("locks %s", pointL(l)), r.locksCurve(ctx, e, l)); err != nil {
			return err
		}
	}
	if first {
		for _, s := range r.o.Shapes {
			err := r.eachKeepAlive(func(once bool) error { return r.candidatesCurve(ctx, e, s, once) })
			if err := point(fmt.Sprintf("candidates %s", s), err); err != nil {
				return err
			}
		}
		for _, n := range r.o.IdleSessions {
			err := r.eachKeepAlive(func(once bool) error { return r.sessionsCurve(ctx, e, n, once) })
			if err := point(fmt.Sprintf("sessions %s", pointN(n)), err); err != nil {
				return err
			}
		}
	}
	return nil
}

// env is one cluster's endpoints and the clients opened on it.
type env struct {
	endpoints []string
	members   int
	mu        sync.Mutex
	clients   []*clientv3.Client
	names     int
}

func (e *env) client() (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: e.endpoints, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.clients = append(e.clients, c)
	e.mu.Unlock()
	return c, nil
}

// clients opens n clients, a few at a time.
func (e *env) newClients(n int) ([]*clientv3.Client, error) {
	out := make([]*clientv3.Client, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = e.client()
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// release closes the given clients now.
func (e *env) release(cs []*clientv3.Client) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, c := range cs {
		if c == nil {
			continue
		}
		cs[i] = nil
		_ = c.Close()
		if i := slices.Index(e.clients, c); i >= 0 {
			e.clients = slices.Delete(e.clients, i, i+1)
		}
	}
}

func (e *env) closeClients() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.clients {
		_ = c.Close()
	}
	e.clients = nil
}

// name returns a fresh name, so steps do not see each other's keys.
func (e *env) name(what string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.names++
	return "bench/scale/" + what + "-" + strconv.Itoa(e.names)
}

// countKeys counts the keys under prefix.
func countKeys(ctx context.Context, c *clientv3.Client, prefix string) (int64, error) {
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Count, nil
}

// countLeases counts the leases the server knows that hold keys. A lease
// left to expire after a clean release holds none: that is the library's
// release policy (session.Session.Close), not a leak.
func countLeases(ctx context.Context, c *clientv3.Client) (int, error) {
	resp, err := c.Leases(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range resp.Leases {
		ttl, err := c.TimeToLive(ctx, l.ID, clientv3.WithAttachedKeys())
		switch {
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
		case err != nil:
			return 0, err
		case ttl.TTL > 0 && len(ttl.Keys) > 0:
			n++
		}
	}
	return n, nil
}

// waitKeys polls until at least n keys are under prefix: a waiter queuing
// exposes no event to wait on.
func waitKeys(ctx context.Context, c *clientv3.Client, prefix string, n int64) error {
	for {
		got, err := countKeys(ctx, c, prefix)
		if err != nil {
			return err
		}
		if got >= n {
			return nil
		}
		if !cluster.Sleep(ctx, time.Millisecond) {
			return context.Cause(ctx)
		}
	}
}

func pointW(w int) string { return "W=" + strconv.Itoa(w) }
func pointL(l int) string { return "L=" + strconv.Itoa(l) }
func pointN(n int) string { return "N=" + strconv.Itoa(n) }

// targets judges issue 16's targets on the 1-member figures.
func targets(res Result, o Options) []Target {
	var out []Target
	judge := func(name string, measured, target float64, unit string, atMost bool) {
		met := false
		if !math.IsNaN(measured) {
			met = measured <= target
			if !atMost {
				met = measured >= target
			}
		}
		out = append(out, Target{Name: name, Measured: Value(measured), Target: Value(target), Unit: unit, AtMost: atMost, Met: met})
	}
	m := o.Members[0]
	if len(o.Waiters) > 1 {
		lo, hi := slices.Min(o.Waiters), slices.Max(o.Waiters)
		a := res.Value(CurveQueue, m, pointW(lo), "handoff_p50_ms", 0)
		b := res.Value(CurveQueue, m, pointW(hi), "handoff_p50_ms", 0)
		judge(fmt.Sprintf("handoff_p50 W=%d / W=%d", hi, lo), b/a, 2, "x", true)
	}
	if len(o.Waiters) > 0 {
		herd := 0.0
		for _, row := range res.Rows {
			if row.Curve == CurveQueue && row.Metric == "herd_releases" {
				herd += float64(row.Coordkit)
			}
		}
		judge("releases that woke >1 waiter, all W", herd, 0, "count", true)
	}
	if len(o.Locks) > 1 {
		lo, hi := slices.Min(o.Locks), slices.Max(o.Locks)
		a := res.Value(CurveLocks, m, pointL(lo), "acquisitions_per_s", 0)
		b := res.Value(CurveLocks, m, pointL(hi), "acquisitions_per_s", 0)
		judge(fmt.Sprintf("acquisitions/s L=%d / L=%d", hi, lo), b/a, 0.7, "x", false)
	}
	if len(o.Locks) > 0 {
		worst := math.NaN()
		for _, row := range res.Rows {
			if row.Curve == CurveLocks && row.Metric == "goroutines_per_held_lock" {
				worst = math.Max(nanTo0(worst), float64(row.Coordkit))
			}
		}
		judge("goroutines per held lock, max over L", worst, GoroutinesPerHeldLock, "count", true)
	}
	for _, s := range o.Shapes {
		f := res.Value(CurveCandidates, m, s.String(), "failover_max_ms", 0)
		judge(fmt.Sprintf("failover %s max", s), f, float64((o.TTL+time.Second)/time.Millisecond), "ms", true)
	}
	// Issue 20: keepalives on one stream per client. The candidates and
	// idle sessions run on the first cluster only.
	m = o.Members[0]
	for _, s := range o.Shapes {
		p := s.String()
		if o.KeepAlive == KeepAliveBoth {
			st := res.Value(CurveCandidates, m, p, "cpu_us_per_keepalive", 0)
			on := res.Value(CurveCandidates, m, p, "cpu_us_per_keepalive", 2)
			judge(fmt.Sprintf("cpu/keepalive stream / KeepAliveOnce, %s", p), st/on, 0.2, "x", true)
		}
		if o.KeepAlive != KeepAliveOnce {
			judge(fmt.Sprintf("new keepalive streams/s at idle, %s", p), res.Value(CurveCandidates, m, p, "keepalive_streams_opened_per_s_idle", 0), 0.1, "per_s", true)
		}
	}
	if o.KeepAlive != KeepAliveOnce {
		for _, n := range o.IdleSessions {
			p := pointN(n)
			judge(fmt.Sprintf("local-deadline expirations, %s", p), res.Value(CurveSessions, m, p, "local_deadline_expirations", 0), 0, "count", true)
			ratio := res.Value(CurveSessions, m, p, "keepalives_per_s", 0) / res.Value(CurveSessions, m, p, "keepalives_model_per_s", 0)
			judge(fmt.Sprintf("keepalives/s / model 3N/T, %s, low", p), ratio, 0.9, "x", false)
			judge(fmt.Sprintf("keepalives/s / model 3N/T, %s, high", p), ratio, 1.1, "x", true)
			judge(fmt.Sprintf("new keepalive streams/s after start-up, %s", p), res.Value(CurveSessions, m, p, "keepalive_streams_opened_per_s", 0), 0.1, "per_s", true)
		}
	}
	return out
}

// GoroutinesPerHeldLock is the constant bound on client goroutines per
// held lock: the Mutex's watch on its own key (its loop, and clientv3's
// goroutine serving that watch). A held lock starts no goroutine of its
// own (lock.Held uses context.AfterFunc).
const GoroutinesPerHeldLock = 2

func nanTo0(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}
