package lockbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/lock"
)

// ErrOptions is returned by Run for options it cannot run with.
var ErrOptions = errors.New("lockbench: invalid options")

// Options bound a run.
type Options struct {
	Iterations int           // uncontended lock+unlock rounds per implementation
	Handoffs   int           // handoffs measured per implementation
	Duration   time.Duration // length of each contended run
	Hold       time.Duration // in the handoff test, how long the holder keeps the lock after the waiter queued
	Workers    []int         // contending clients of each contended run, 2..256
	NoFsync    bool          // run etcd without fsync (faster, not what users run)
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
	return nil
}

// Row is one metric measured for both implementations.
type Row struct {
	Metric          string  `json:"metric"`
	Coordkit        float64 `json:"coordkit"`
	EtcdConcurrency float64 `json:"etcd_concurrency"`
	Unit            string  `json:"unit"`
}

// Result is the outcome of a run; its JSON form is coordctl bench lock's
// -w json contract.
type Result struct {
	Benchmark string `json:"benchmark"` // "lock"
	Fsync     bool   `json:"fsync"`
	Rows      []Row  `json:"rows"`
}

// Table is the result in the form every bench command prints.
func (r Result) Table() bench.Table {
	fsync := "on (as etcd runs by default)"
	if !r.Fsync {
		fsync = "OFF (--unsafe-no-fsync)"
	}
	t := bench.Table{
		Title:   "lock benchmark: embedded single-member etcd, fsync " + fsync,
		Columns: []string{"coordkit", "etcd_concurrency"},
		Ratios:  []bench.Ratio{{Of: "coordkit", To: "etcd_concurrency"}},
	}
	for _, row := range r.Rows {
		t.Add(row.Metric, row.Unit, row.Coordkit, row.EtcdConcurrency)
	}
	return t
}

// Run starts an embedded etcd and measures both implementations on it.
// It returns ErrOptions for invalid options and ctx's error, wrapped, when
// ctx ends first.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "bench lock: "+format+"\n", args...)
		}
	}
	dir, err := os.MkdirTemp("", "coordctl-bench-lock-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	progress("starting embedded etcd in %s (fsync %v)", dir, !o.NoFsync)
	srv, err := etcdembed.Start(ctx, etcdembed.Config{DataDir: dir, UnsafeNoFsync: o.NoFsync})
	if err != nil {
		return Result{}, fmt.Errorf("lockbench: start etcd: %w", err)
	}
	defer srv.Close()
	env := &env{endpoints: srv.Endpoints()}
	defer env.close()

	res := Result{Benchmark: "lock", Fsync: !o.NoFsync}
	row := func(metric, unit string) int {
		res.Rows = append(res.Rows, Row{Metric: metric, Unit: unit})
		return len(res.Rows) - 1
	}
	set := func(r int, impl int, v float64) {
		if impl == 0 {
			res.Rows[r].Coordkit = v
		} else {
			res.Rows[r].EtcdConcurrency = v
		}
	}

	unc := row("uncontended_p50_ms", "ms")
	progress("uncontended lock+unlock, both implementations in turn, %d rounds each", o.Iterations)
	ds, err := uncontended(ctx, env, o.Iterations)
	if err != nil {
		return Result{}, fmt.Errorf("lockbench: uncontended: %w", err)
	}
	for i, d := range ds {
		set(unc, i, bench.Ms(bench.Percentile(d, 0.50)))
	}
	p50, p99 := row("handoff_p50_ms", "ms"), row("handoff_p99_ms", "ms")
	for i, impl := range impls {
		progress("handoff between two clients, %s, %d handoffs", impl.label, o.Handoffs)
		d, err := handoff(ctx, env, impl, o.Handoffs, o.Hold)
		if err != nil {
			return Result{}, fmt.Errorf("lockbench: handoff, %s: %w", impl.label, err)
		}
		set(p50, i, bench.Ms(bench.Percentile(d, 0.50)))
		set(p99, i, bench.Ms(bench.Percentile(d, 0.99)))
	}
	for _, w := range o.Workers {
		r := row(fmt.Sprintf("contended_%d_per_s", w), "per_s")
		for i, impl := range impls {
			progress("%d contending clients, %s, %s", w, impl.label, o.Duration)
			rate, err := contended(ctx, env, impl, w, o.Duration)
			if err != nil {
				return Result{}, fmt.Errorf("lockbench: %d contending, %s: %w", w, impl.label, err)
			}
			set(r, i, rate)
		}
	}
	return res, nil
}

// locker is what both implementations offer the benchmark.
type locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Close()
}

type coordkitLocker struct {
	m    *lock.Mutex
	held *lock.Held
}

func (l *coordkitLocker) Lock(ctx context.Context) error {
	h, err := l.m.Lock(ctx)
	l.held = h
	return err
}

func (l *coordkitLocker) Unlock(ctx context.Context) error { return l.held.Unlock(ctx) }
func (l *coordkitLocker) Close()                           { _ = l.m.Close() }

type etcdLocker struct {
	s *concurrency.Session
	m *concurrency.Mutex
}

func (l *etcdLocker) Lock(ctx context.Context) error   { return l.m.Lock(ctx) }
func (l *etcdLocker) Unlock(ctx context.Context) error { return l.m.Unlock(ctx) }
func (l *etcdLocker) Close()                           { _ = l.s.Close() }

// impl builds lockers of one implementation on a name.
type impl struct {
	label string
	new   func(ctx context.Context, cli *clientv3.Client, name string) (locker, error)
}

// impls are measured in this order: the Result's columns.
var impls = []impl{
	{"coordkit", func(ctx context.Context, cli *clientv3.Client, name string) (locker, error) {
		m, err := lock.New(cli, name, lock.WithTTL(10*time.Second))
		if err != nil {
			return nil, err
		}
		// Create the session now, outside the timed part.
		h, err := m.Lock(ctx)
		if err != nil {
			_ = m.Close()
			return nil, err
		}
		if err := h.Unlock(ctx); err != nil {
			_ = m.Close()
			return nil, err
		}
		return &coordkitLocker{m: m}, nil
	}},
	{"etcd concurrency", func(ctx context.Context, cli *clientv3.Client, name string) (locker, error) {
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(10), concurrency.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		return &etcdLocker{s: s, m: concurrency.NewMutex(s, name)}, nil
	}},
}

// env is the embedded etcd's clients of one run.
type env struct {
	endpoints []string
	mu        sync.Mutex
	clients   []*clientv3.Client
	names     atomic.Int64
}

func (e *env) client() (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: e.endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.clients = append(e.clients, c)
	e.mu.Unlock()
	return c, nil
}

func (e *env) close() {
	for _, c := range e.clients {
		_ = c.Close()
	}
}

// name returns a fresh lock name, so runs do not see each other's keys.
func (e *env) name(what string) string {
	return fmt.Sprintf("bench/%s-%d", what, e.names.Add(1))
}

// lockers makes n lockers of im on one name, each with its own client.
func (e *env) lockers(ctx context.Context, im impl, name string, n int) ([]locker, error) {
	out := make([]locker, 0, n)
	for range n {
		c, err := e.client()
		if err != nil {
			return out, err
		}
		l, err := im.new(ctx, c, name)
		if err != nil {
			return out, err
		}
		out = append(out, l)
	}
	return out, nil
}

func closeAll(ls []locker) {
	for _, l := range ls {
		l.Close()
	}
}

// uncontended locks and unlocks n times with each implementation,
// alternating between them round by round so that both see the same
// machine (disk, other load) and neither gets all the warm-up.
func uncontended(ctx context.Context, e *env, n int) ([][]time.Duration, error) {
	var ls []locker
	defer func() { closeAll(ls) }()
	for _, im := range impls {
		l, err := e.lockers(ctx, im, e.name("uncontended"), 1)
		ls = append(ls, l...)
		if err != nil {
			return nil, err
		}
	}
	const warmup = 5
	out := make([][]time.Duration, len(ls))
	for i := range n + warmup {
		for j, l := range ls {
			start := time.Now()
			if err := l.Lock(ctx); err != nil {
				return nil, err
			}
			if err := l.Unlock(ctx); err != nil {
				return nil, err
			}
			if i >= warmup {
				out[j] = append(out[j], time.Since(start))
			}
		}
	}
	return out, nil
}

// handoffJitter is the range of the random pause before a client queues
// again in the handoff test: one period of etcd's watch catch-up loop.
const handoffJitter = 100 * time.Millisecond

// handoff has two clients take turns: each holder waits until the other
// has queued, holds for hold, then releases; the handoff is the time from
// its Unlock call to the other's Lock returning. A client queues again
// after a random pause. That matters for concurrency.Mutex only: its waiter
// is served when etcd's 100ms catch-up loop next runs after it queued, so
// its handoff is the time from the release to that run, zero if the hold
// outlasted it.
func handoff(ctx context.Context, e *env, im impl, n int, hold time.Duration) ([]time.Duration, error) {
	name := e.name("handoff")
	ls, err := e.lockers(ctx, im, name, 2)
	defer closeAll(ls)
	if err != nil {
		return nil, err
	}
	watcher, err := e.client()
	if err != nil {
		return nil, err
	}
	var (
		mu        sync.Mutex
		released  time.Time // when the last holder called Unlock
		samples   []time.Duration
		stop      atomic.Bool
		firstErr  error
		wg        sync.WaitGroup
		prefix    = name + "/"
		countKeys = func() int {
			resp, err := watcher.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return 0
			}
			return int(resp.Count)
		}
	)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil && wctx.Err() == nil {
			firstErr = err
		}
		mu.Unlock()
		stop.Store(true)
		cancel()
	}
	done := func() bool { return stop.Load() || wctx.Err() != nil }
	for _, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done() {
				if err := l.Lock(wctx); err != nil {
					fail(err)
					return
				}
				now := time.Now()
				mu.Lock()
				if !released.IsZero() {
					samples = append(samples, now.Sub(released))
					if len(samples) >= n {
						stop.Store(true)
					}
				}
				mu.Unlock()
				// Release only once the other client waits (or we are done):
				// a waiter queuing exposes no event to wait on, so poll.
				for !done() && countKeys() < 2 {
					bench.Sleep(wctx, 200*time.Microsecond)
				}
				if !done() && hold > 0 {
					bench.Sleep(wctx, hold)
				}
				mu.Lock()
				released = time.Now()
				mu.Unlock()
				if err := l.Unlock(context.WithoutCancel(wctx)); err != nil {
					fail(err)
					return
				}
				// Queue again at a random moment, so that the waiter's watch
				// meets etcd's 100ms catch-up loop at a random phase.
				bench.Sleep(wctx, rand.N(handoffJitter))
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return samples, ctx.Err()
}

// contended has w clients lock and unlock as fast as they can for d and
// returns acquisitions per second.
func contended(ctx context.Context, e *env, im impl, w int, d time.Duration) (float64, error) {
	ls, err := e.lockers(ctx, im, e.name(fmt.Sprintf("contended%d", w)), w)
	defer closeAll(ls)
	if err != nil {
		return 0, err
	}
	var count atomic.Int64
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	start := time.Now()
	wctx, cancel := context.WithDeadline(ctx, start.Add(d))
	defer cancel()
	for _, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wctx.Err() == nil {
				if err := l.Lock(wctx); err != nil {
					if wctx.Err() == nil {
						errMu.Lock()
						firstErr = err
						errMu.Unlock()
					}
					return
				}
				if time.Now().Before(start.Add(d)) {
					count.Add(1)
				}
				if err := l.Unlock(context.WithoutCancel(wctx)); err != nil {
					errMu.Lock()
					firstErr = err
					errMu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return float64(count.Load()) / d.Seconds(), nil
}

