package lockbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/pglock"
	"github.com/coordkit/coordkit/internal/redislock"
)

// ErrOptions is returned by Run for options it cannot run with.
var ErrOptions = errors.New("lockbench: invalid options")

// AgainstRedsync is the Options.Against value that adds the redsync columns.
const AgainstRedsync = "redsync"

// againstAll are the Options.Against values, in the order of their columns.
var againstAll = []string{AgainstRedsync, AgainstPG, AgainstAPI, AgainstRedisPy, AgainstPsycopg}

// Options bound a run.
type Options struct {
	Iterations int           // uncontended lock+unlock rounds per implementation
	Handoffs   int           // handoffs measured per implementation
	Duration   time.Duration // length of each contended run
	Hold       time.Duration // in the handoff test, how long the holder keeps the lock after the waiter queued
	Workers    []int         // contending clients of each contended run, 2..256
	NoFsync    bool          // run etcd without fsync (faster, not what users run)
	// Against lists the other locks measured too: AgainstRedsync adds
	// redsync with its default options and redsync with a zero retry delay,
	// on the Redis server at Redis.
	Against []string
	// Redis is the Redis server's host:port; required with AgainstRedsync,
	// and only with it.
	Redis string
	// DSN is the PostgreSQL database of AgainstPG (a pgx DSN); required
	// with it, and only with it.
	DSN string
	// Coordctl is a coordctl binary: with it the crash handoff is measured
	// (holder processes killed), for coordkit and, against pg-advisory or
	// api, for their columns too.
	Coordctl string
	// Python is the python3 of AgainstAPI: the api_python column's clients
	// run clients/python's coordkit.py in it. Required with it, and only
	// with it.
	Python string
	// CrashHandoffs is the number of crash handoffs measured per
	// implementation (default 5 when zero).
	CrashHandoffs int
	// RedisKeyspace holds the run's Redis keys, all deleted at the end; a
	// fresh random "coordkit:bench-lock:..." keyspace when zero.
	RedisKeyspace redislock.Keyspace
	// Progress receives one line per step ("bench lock: ..."); nil discards.
	Progress io.Writer
}

// Validate reports the first option Run cannot use, wrapping ErrOptions.
func (o Options) Validate() error {
	switch {
	case o.Iterations < 1:
		return fmt.Errorf("%w: iterations %d: must be positive", ErrOptions, o.Iterations)
	case o.Handoffs < 1:
		return fmt.Errorf("%w: handoffs %d: must be positive", ErrOptions, o.Handoffs)
	case o.Duration <= 0:
		return fmt.Errorf("%w: duration %s: must be positive", ErrOptions, o.Duration)
	case o.Hold < 0:
		return fmt.Errorf("%w: hold %s: must not be negative", ErrOptions, o.Hold)
	case len(o.Workers) == 0:
		return fmt.Errorf("%w: workers must list at least one count", ErrOptions)
	}
	for _, w := range o.Workers {
		if w < 2 || w > 256 {
			return fmt.Errorf("%w: workers %d: want 2..256", ErrOptions, w)
		}
	}
	for _, a := range o.Against {
		if !slices.Contains(againstAll, a) {
			return fmt.Errorf("%w: against %q: the other locks measured are %q", ErrOptions, a, againstAll)
		}
	}
	has := func(any ...string) bool {
		return slices.ContainsFunc(o.Against, func(a string) bool { return slices.Contains(any, a) })
	}
	if has(AgainstAPI, AgainstRedisPy, AgainstPsycopg) != (o.Python != "") {
		return fmt.Errorf("%w: against %s, %s or %s needs a python3, and only they", ErrOptions, AgainstAPI, AgainstRedisPy, AgainstPsycopg)
	}
	switch pg := has(AgainstPG, AgainstPsycopg); {
	case pg && o.DSN == "":
		return fmt.Errorf("%w: against %s or %s needs a PostgreSQL DSN", ErrOptions, AgainstPG, AgainstPsycopg)
	case !pg && o.DSN != "":
		return fmt.Errorf("%w: a DSN is only used against %s or %s", ErrOptions, AgainstPG, AgainstPsycopg)
	case o.CrashHandoffs < 0:
		return fmt.Errorf("%w: crash handoffs %d: must not be negative", ErrOptions, o.CrashHandoffs)
	}
	switch redis := has(AgainstRedsync, AgainstRedisPy); {
	case redis && o.Redis == "":
		return fmt.Errorf("%w: against %s or %s needs a Redis address", ErrOptions, AgainstRedsync, AgainstRedisPy)
	case !redis && o.Redis != "":
		return fmt.Errorf("%w: a Redis address (%s) is only used against %s or %s", ErrOptions, o.Redis, AgainstRedsync, AgainstRedisPy)
	}
	return nil
}

// Row is one metric measured for every implementation of the run. The
// redsync fields are absent unless the run was against redsync.
type Row struct {
	Metric          string   `json:"metric"`
	Coordkit        float64  `json:"coordkit"`
	EtcdConcurrency float64  `json:"etcd_concurrency"`
	Redsync         *float64 `json:"redsync,omitempty"`
	RedsyncMinRetry *float64 `json:"redsync_min_retry,omitempty"`
	PGAdvisory      *float64 `json:"pg_advisory,omitempty"`
	APIPython       *float64 `json:"api_python,omitempty"`
	RedisPy         *float64 `json:"redis_py,omitempty"`
	Psycopg         *float64 `json:"psycopg,omitempty"`
	Unit            string   `json:"unit"`
}

// MarshalJSON writes a value that was not measured (NaN: the crash
// handoff of a lock without a holder process) as null.
func (r Row) MarshalJSON() ([]byte, error) {
	type plain Row
	num := func(v float64) *float64 {
		if math.IsNaN(v) {
			return nil
		}
		return &v
	}
	type out struct {
		plain
		Coordkit        *float64  `json:"coordkit"`
		EtcdConcurrency *float64  `json:"etcd_concurrency"`
		Redsync         *nullable `json:"redsync,omitempty"`
		RedsyncMinRetry *nullable `json:"redsync_min_retry,omitempty"`
		PGAdvisory      *nullable `json:"pg_advisory,omitempty"`
		APIPython       *nullable `json:"api_python,omitempty"`
		RedisPy         *nullable `json:"redis_py,omitempty"`
		Psycopg         *nullable `json:"psycopg,omitempty"`
	}
	o := out{plain: plain(r), Coordkit: num(r.Coordkit), EtcdConcurrency: num(r.EtcdConcurrency)}
	o.Redsync, o.RedsyncMinRetry, o.PGAdvisory = nullOf(r.Redsync), nullOf(r.RedsyncMinRetry), nullOf(r.PGAdvisory)
	o.APIPython, o.RedisPy, o.Psycopg = nullOf(r.APIPython), nullOf(r.RedisPy), nullOf(r.Psycopg)
	return json.Marshal(o)
}

// nullable is a present column's value, null when not measured.
type nullable struct{ v float64 }

func nullOf(v *float64) *nullable {
	if v == nil {
		return nil
	}
	return &nullable{*v}
}

func (n nullable) MarshalJSON() ([]byte, error) {
	if math.IsNaN(n.v) {
		return []byte("null"), nil
	}
	return json.Marshal(n.v)
}

// value is the row's value of the column named key.
func (r *Row) value(key string) *float64 {
	switch key {
	case colCoordkit:
		return &r.Coordkit
	case colEtcd:
		return &r.EtcdConcurrency
	case colRedsync:
		if r.Redsync == nil {
			r.Redsync = new(float64)
		}
		return r.Redsync
	case colRedsyncMin:
		if r.RedsyncMinRetry == nil {
			r.RedsyncMinRetry = new(float64)
		}
		return r.RedsyncMinRetry
	case colPG:
		if r.PGAdvisory == nil {
			r.PGAdvisory = new(float64)
		}
		return r.PGAdvisory
	case colAPI:
		if r.APIPython == nil {
			r.APIPython = new(float64)
		}
		return r.APIPython
	case colRedisPy:
		if r.RedisPy == nil {
			r.RedisPy = new(float64)
		}
		return r.RedisPy
	case colPsycopg:
		if r.Psycopg == nil {
			r.Psycopg = new(float64)
		}
		return r.Psycopg
	}
	panic("lockbench: unknown column " + key)
}

// Result is the outcome of a run; its JSON form is coordctl bench lock's
// -w json contract.
type Result struct {
	Benchmark string `json:"benchmark"` // "lock"
	Fsync     bool   `json:"fsync"`
	// Redis is the Redis server of the redsync columns, absent without them.
	Redis string `json:"redis,omitempty"`
	// Postgres is the PostgreSQL server (host:port/database) of the
	// pg_advisory column, and Keepalive its lock connections' settings;
	// absent without it.
	Postgres  string `json:"postgres,omitempty"`
	Keepalive string `json:"keepalive,omitempty"`
	// API is true when the api_python column was measured.
	API  bool  `json:"api,omitempty"`
	Rows []Row `json:"rows"`
	// Breakdown is the uncontended lock+unlock by what it sends
	// (breakdown.go): bare clientv3 steps from concurrency.Mutex's
	// requests to coordkit's, then the two libraries.
	Breakdown []BreakdownRow `json:"uncontended_breakdown,omitempty"`
}

// Table is the result in the form every bench command prints.
func (r Result) Table() bench.Table {
	fsync := "on (as etcd runs by default)"
	if !r.Fsync {
		fsync = "OFF (--unsafe-no-fsync)"
	}
	t := bench.Table{
		Title:   "lock benchmark: embedded single-member etcd, fsync " + fsync,
		Columns: []string{colCoordkit, colEtcd},
	}
	if len(r.Rows) > 0 && r.Rows[0].Redsync != nil {
		t.Title += fmt.Sprintf("; redsync %s on Redis %s (redsync: default options; redsync_min_retry: retry delay 0)", redsyncVersion, r.Redis)
		t.Columns = append(t.Columns, colRedsync, colRedsyncMin)
	}
	if len(r.Rows) > 0 && r.Rows[0].PGAdvisory != nil {
		t.Title += fmt.Sprintf("; pg_advisory: session-level pg_advisory_lock on PostgreSQL %s, one lock connection per client (keepalives %s); crash_handoff: the holder process SIGKILLed, coordkit's holder with TTL %s", r.Postgres, r.Keepalive, CrashTTL)
		t.Columns = append(t.Columns, colPG)
	}
	if r.API {
		t.Title += fmt.Sprintf("; api_python: the coordination API (served in this process on loopback) from one Python process per client (clients/python), driven over a pipe; crash_handoff: the holder process SIGKILLed, coordkit's holder with TTL %s", CrashTTL)
		t.Columns = append(t.Columns, colAPI)
	}
	if len(r.Rows) > 0 && r.Rows[0].RedisPy != nil {
		t.Title += fmt.Sprintf("; redis_py: redis-py's Lock (timeout %ss, its default 0.1s polling) on Redis %s from one Python process per client, crash holder renewing a %s timeout every third of it", pyLocksTTL, r.Redis, CrashTTL)
		t.Columns = append(t.Columns, colRedisPy)
	}
	if len(r.Rows) > 0 && r.Rows[0].Psycopg != nil {
		t.Title += fmt.Sprintf("; psycopg: pg_advisory_lock through psycopg2 on PostgreSQL %s from one Python process per client", r.Postgres)
		t.Columns = append(t.Columns, colPsycopg)
	}
	if r.Postgres == "" && !r.API && slices.ContainsFunc(r.Rows, func(row Row) bool { return strings.HasPrefix(row.Metric, "crash_handoff") }) {
		t.Title += fmt.Sprintf("; crash_handoff: the holder process ('coordctl lock --ttl %s') SIGKILLed", CrashTTL)
	}
	for _, c := range t.Columns[1:] {
		t.Ratios = append(t.Ratios, bench.Ratio{Of: colCoordkit, To: c})
	}
	for _, row := range r.Rows {
		var vs []float64
		for _, c := range t.Columns {
			vs = append(vs, *row.value(c))
		}
		t.Add(row.Metric, row.Unit, vs...)
	}
	return t
}

// Run starts an embedded etcd and measures every implementation on it
// (and on Redis when against redsync). It returns ErrOptions for invalid
// options, an error wrapping redislock.ErrUnreachable (naming the address)
// when Redis does not answer within redislock.DefaultDialTimeout, and
// ctx's error, wrapped, when ctx ends first.
func Run(ctx context.Context, o Options) (res Result, err error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "bench lock: "+format+"\n", args...)
		}
	}
	e := &env{}
	defer e.close()
	if o.Redis != "" {
		// Before starting etcd: an address nobody answers on fails fast.
		if err := e.dialRedis(ctx, o.Redis, o.RedisKeyspace); err != nil {
			return Result{}, fmt.Errorf("lockbench: %w", err)
		}
		progress("Redis %s answers; keys under %s, deleted at the end", o.Redis, e.keyspace.Prefix())
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if _, cerr := e.keyspace.Cleanup(cctx, e.redis); cerr != nil && err == nil {
				err = fmt.Errorf("lockbench: %w", cerr)
			}
		}()
	}
	if o.DSN != "" {
		if err := e.dialPG(ctx, o.DSN); err != nil {
			return Result{}, fmt.Errorf("lockbench: %w", err)
		}
		progress("PostgreSQL %s answers; lock names under %s", e.pgWhere, e.pgNS.Prefix())
	}
	srv, stop, err := bench.StartEtcd(ctx, "lock", o.NoFsync, o.Progress)
	if err != nil {
		return Result{}, err
	}
	defer stop()
	e.endpoints = srv.Endpoints()
	api := slices.Contains(o.Against, AgainstAPI)
	if o.Python != "" {
		if err := e.startPython(o.Python); err != nil {
			return Result{}, fmt.Errorf("lockbench: the Python drivers: %w", err)
		}
	}
	if api {
		if err := e.startAPI(ctx, o.Python); err != nil {
			return Result{}, fmt.Errorf("lockbench: the coordination API: %w", err)
		}
		progress("coordination API on %s; Python clients run %s", e.apiSrv.srv.URL, o.Python)
	}

	impls := etcdImpls
	res = Result{Benchmark: "lock", Fsync: !o.NoFsync, Redis: o.Redis}
	if slices.Contains(o.Against, AgainstRedsync) {
		impls = append(slices.Clone(impls), redsyncImpls...)
	}
	if o.DSN != "" {
		res.Postgres = e.pgWhere
	}
	if slices.Contains(o.Against, AgainstPG) {
		impls = append(slices.Clone(impls), pgImpl)
		res.Keepalive = pglock.DefaultKeepalive.String()
	}
	if api {
		impls = append(slices.Clone(impls), apiImpl)
		res.API = true
	}
	if slices.Contains(o.Against, AgainstRedisPy) {
		impls = append(slices.Clone(impls), redisPyImpl)
	}
	if slices.Contains(o.Against, AgainstPsycopg) {
		impls = append(slices.Clone(impls), psycopgImpl)
	}
	row := func(metric, unit string) int {
		r := Row{Metric: metric, Unit: unit}
		for _, im := range impls {
			r.value(im.key) // the redsync fields are present when measured
		}
		res.Rows = append(res.Rows, r)
		return len(res.Rows) - 1
	}
	set := func(r int, im impl, v float64) { *res.Rows[r].value(im.key) = v }

	unc := row("uncontended_p50_ms", "ms")
	steps := breakdownImpls()
	progress("uncontended lock+unlock, all implementations and %d bare request steps (the breakdown) in turn, %d rounds each", len(steps), o.Iterations)
	for _, st := range breakdownSteps {
		progress("breakdown step %s: %s", st.key, st.label)
	}
	kvReq, watchReq := row("uncontended_kv_requests_per_op", "requests"), row("uncontended_watch_requests_per_op", "requests")
	ds, counts, err := uncontended(ctx, e, append(slices.Clone(impls), steps...), o.Iterations)
	if err != nil {
		return Result{}, fmt.Errorf("lockbench: uncontended: %w", err)
	}
	stepP50s := make([]float64, len(steps))
	for i := range steps {
		j := len(impls) + i
		stepP50s[i] = bench.Ms(bench.Percentile(ds[j], 0.50))
		progress("uncontended, %s: requests per lock+unlock: %s", steps[i].label, counts[j].all)
	}
	// etcdImpls come first: coordkit, then concurrency.Mutex.
	res.Breakdown = breakdownRows(stepP50s, counts[len(impls):], bench.Ms(bench.Percentile(ds[1], 0.50)), bench.Ms(bench.Percentile(ds[0], 0.50)), counts[1], counts[0])
	ds, counts = ds[:len(impls)], counts[:len(impls)]
	for i, d := range ds {
		set(unc, impls[i], bench.Ms(bench.Percentile(d, 0.50)))
		if c := counts[i]; c != nil {
			set(kvReq, impls[i], c.kv)
			set(watchReq, impls[i], c.watch)
			progress("uncontended, %s: requests per lock+unlock: %s", impls[i].label, c.all)
		} else {
			set(kvReq, impls[i], math.NaN())
			set(watchReq, impls[i], math.NaN())
		}
	}
	p50, p99 := row("handoff_p50_ms", "ms"), row("handoff_p99_ms", "ms")
	driven := -1
	if api {
		driven = row("handoff_driven_p50_ms", "ms")
	}
	progress("handoff between two clients, every implementation in turn, blocks of %d, %d handoffs each", handoffBlock, o.Handoffs)
	hs, err := handoffsInTurn(ctx, e, impls, o.Handoffs, o.Hold)
	if err != nil {
		return Result{}, err
	}
	for i, im := range impls {
		h := hs[i]
		set(p50, im, bench.Ms(bench.Percentile(h.inClient, 0.50)))
		set(p99, im, bench.Ms(bench.Percentile(h.inClient, 0.99)))
		if driven >= 0 {
			set(driven, im, bench.Ms(bench.Percentile(h.driven, 0.50)))
		}
	}
	if o.Coordctl != "" {
		n := o.CrashHandoffs
		if n == 0 {
			n = 5
		}
		c50, c99, cmax := row("crash_handoff_p50_ms", "ms"), row("crash_handoff_p99_ms", "ms"), row("crash_handoff_max_ms", "ms")
		for _, im := range impls {
			if _, ok := crashHolders[im.key]; !ok {
				for _, r := range []int{c50, c99, cmax} {
					set(r, im, math.NaN())
				}
				continue
			}
			progress("crash handoff, %s: the holder process killed, %d times", im.label, n)
			d, err := crashHandoff(ctx, e, im, o.Coordctl, n)
			if err != nil {
				return Result{}, fmt.Errorf("lockbench: crash handoff, %s: %w", im.label, err)
			}
			set(c50, im, bench.Ms(bench.Percentile(d, 0.50)))
			set(c99, im, bench.Ms(bench.Percentile(d, 0.99)))
			set(cmax, im, bench.Ms(slices.Max(d)))
		}
	}
	if api && o.Coordctl != "" {
		if err := agentLoadRows(ctx, e, o, impls, row, set, progress); err != nil {
			return Result{}, err
		}
	}
	for _, w := range o.Workers {
		r := row(fmt.Sprintf("contended_%d_per_s", w), "per_s")
		failed := -1
		if slices.Contains(o.Against, AgainstRedsync) {
			failed = row(fmt.Sprintf("contended_%d_lock_failed", w), "count")
		}
		for _, im := range impls {
			progress("%d contending clients, %s, %s", w, im.label, o.Duration)
			c, err := contended(ctx, e, im, w, o.Duration)
			if err != nil {
				return Result{}, fmt.Errorf("lockbench: %d contending, %s: %w", w, im.label, err)
			}
			set(r, im, c.perSecond)
			if failed >= 0 {
				set(failed, im, float64(c.failed))
			}
		}
	}
	return res, nil
}
