package sembench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/semaphore"
)

// ErrOptions is returned by Run for options it cannot run with.
var ErrOptions = errors.New("sembench: invalid options")

// Options bound a run.
type Options struct {
	Limits   []int         // semaphore limits measured, each with 2×limit workers (1..64)
	Duration time.Duration // length of each throughput run
	Handoffs int           // handoffs measured per implementation at limit 1
	Hold     time.Duration // in the handoff test, how long the holder keeps its slot after the waiter queued
	NoFsync  bool          // run etcd without fsync (faster, not what users run)
	// Progress receives one line per step ("bench sem: ..."); nil discards.
	Progress io.Writer
}

// Validate reports the first option Run cannot use, wrapping ErrOptions.
func (o Options) Validate() error {
	switch {
	case len(o.Limits) == 0:
		return fmt.Errorf("%w: limits must list at least one limit", ErrOptions)
	case o.Duration <= 0:
		return fmt.Errorf("%w: duration %s: must be positive", ErrOptions, o.Duration)
	case o.Handoffs < 1:
		return fmt.Errorf("%w: handoffs %d: must be positive", ErrOptions, o.Handoffs)
	case o.Hold < 0:
		return fmt.Errorf("%w: hold %s: must not be negative", ErrOptions, o.Hold)
	}
	for _, l := range o.Limits {
		if l < 1 || l > 64 {
			return fmt.Errorf("%w: limit %d: want 1..64", ErrOptions, l)
		}
	}
	return nil
}

// Row is one metric. EtcdConcurrency is null (JSON) where etcd has nothing
// to compare: limits above 1.
type Row struct {
	Metric          string   `json:"metric"`
	Coordkit        float64  `json:"coordkit"`
	EtcdConcurrency *float64 `json:"etcd_concurrency"`
	Unit            string   `json:"unit"`
}

// Result is the outcome of a run; its JSON form is coordctl bench sem's -w
// json contract.
type Result struct {
	Benchmark string `json:"benchmark"` // "sem"
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
		Title:   "sem benchmark: embedded single-member etcd, fsync " + fsync + "; etcd_concurrency is concurrency.Mutex (limit 1 only)",
		Columns: []string{"coordkit", "etcd_concurrency"},
		Ratios:  []bench.Ratio{{Of: "coordkit", To: "etcd_concurrency"}},
	}
	for _, row := range r.Rows {
		etcd := math.NaN()
		if row.EtcdConcurrency != nil {
			etcd = *row.EtcdConcurrency
		}
		t.Add(row.Metric, row.Unit, row.Coordkit, etcd)
	}
	return t
}

// Run starts an embedded etcd and measures on it. It returns ErrOptions
// for invalid options and ctx's error, wrapped, when ctx ends first.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "bench sem: "+format+"\n", args...)
		}
	}
	srv, stop, err := bench.StartEtcd(ctx, "sem", o.NoFsync, o.Progress)
	if err != nil {
		return Result{}, err
	}
	defer stop()
	e := &env{bench.Clients{Endpoints: srv.Endpoints()}}
	defer e.CloseAll()

	res := Result{Benchmark: "sem", Fsync: !o.NoFsync}
	for _, limit := range o.Limits {
		row := Row{Metric: fmt.Sprintf("limit_%d_acq_per_s", limit), Unit: "per_s"}
		for _, im := range impls {
			if limit > 1 && im.mutex {
				continue
			}
			progress("limit %d, %d workers, %s, %s", limit, 2*limit, im.label, o.Duration)
			rate, err := throughput(ctx, e, im, limit, o.Duration)
			if err != nil {
				return Result{}, fmt.Errorf("sembench: limit %d, %s: %w", limit, im.label, err)
			}
			row.set(im, rate)
		}
		res.Rows = append(res.Rows, row)
	}
	p50 := Row{Metric: "handoff_p50_ms", Unit: "ms"}
	p99 := Row{Metric: "handoff_p99_ms", Unit: "ms"}
	for _, im := range impls {
		progress("handoff at limit 1 between two workers, %s, %d handoffs", im.label, o.Handoffs)
		d, err := handoff(ctx, e, im, o.Handoffs, o.Hold)
		if err != nil {
			return Result{}, fmt.Errorf("sembench: handoff, %s: %w", im.label, err)
		}
		p50.set(im, bench.Ms(bench.Percentile(d, 0.50)))
		p99.set(im, bench.Ms(bench.Percentile(d, 0.99)))
	}
	res.Rows = append(res.Rows, p50, p99)
	return res, nil
}

func (r *Row) set(im impl, v float64) {
	if im.mutex {
		r.EtcdConcurrency = &v
	} else {
		r.Coordkit = v
	}
}

// semLocker is a bench.Locker on one worker's coordkit semaphore: Lock
// takes a slot.
type semLocker struct {
	s    *semaphore.Semaphore
	held *semaphore.Held
}

func (a *semLocker) Lock(ctx context.Context) (err error) {
	a.held, err = a.s.Acquire(ctx)
	return err
}
func (a *semLocker) Unlock(ctx context.Context) error { return a.held.Release(ctx) }
func (a *semLocker) Close()                           { _ = a.s.Close() }

// impl builds workers of one implementation on a name.
type impl struct {
	label string
	mutex bool // concurrency.Mutex: limit 1 only
	new   func(ctx context.Context, cli *clientv3.Client, name string, limit int) (bench.Locker, error)
	// waiting is the key prefix under which a waiter has a key (and how
	// many keys there are once one waits).
	waiting func(name string) (prefix string, n int)
}

// impls are measured in this order.
var impls = []impl{
	{"coordkit", false, func(ctx context.Context, cli *clientv3.Client, name string, limit int) (bench.Locker, error) {
		s, err := semaphore.New(cli, name, limit, semaphore.WithTTL(10*time.Second))
		if err != nil {
			return nil, err
		}
		a := &semLocker{s: s}
		// Create the session now, outside the timed part (the name is
		// free while workers are made).
		if err := a.Lock(ctx); err != nil {
			a.Close()
			return nil, err
		}
		if err := a.Unlock(ctx); err != nil {
			a.Close()
			return nil, err
		}
		return a, nil
	}, func(name string) (string, int) { return name + "/queue/", 1 }},
	{"etcd concurrency", true, func(ctx context.Context, cli *clientv3.Client, name string, _ int) (bench.Locker, error) {
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(10), concurrency.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		return &bench.EtcdMutex{S: s, M: concurrency.NewMutex(s, name)}, nil
	}, func(name string) (string, int) { return name + "/", 2 }},
}

// env is the embedded etcd's clients of one run.
type env struct{ bench.Clients }

// workers makes n workers of im on one name, each with its own client.
func (e *env) workers(ctx context.Context, im impl, name string, limit, n int) ([]bench.Locker, error) {
	out := make([]bench.Locker, 0, n)
	for range n {
		c, err := e.Client()
		if err != nil {
			return out, err
		}
		a, err := im.new(ctx, c, name, limit)
		if err != nil {
			return out, err
		}
		out = append(out, a)
	}
	return out, nil
}

func closeAll(as []bench.Locker) {
	for _, a := range as {
		a.Close()
	}
}

// throughput has 2×limit workers acquire and release as fast as they can
// for d and returns acquisitions per second.
func throughput(ctx context.Context, e *env, im impl, limit int, d time.Duration) (float64, error) {
	as, err := e.workers(ctx, im, e.Name(fmt.Sprintf("limit%d", limit)), limit, 2*limit)
	defer closeAll(as)
	if err != nil {
		return 0, err
	}
	var count atomic.Int64
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	start := time.Now()
	wctx, cancel := bench.Window(ctx, d)
	defer cancel()
	for _, a := range as {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wctx.Err() == nil {
				if err := a.Lock(wctx); err != nil {
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
				if err := a.Unlock(context.WithoutCancel(wctx)); err != nil {
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

// handoffJitter is the range of the random pause before a worker queues
// again: one period of etcd's watch catch-up loop (see lockbench).
const handoffJitter = 100 * time.Millisecond

// handoff has two workers take turns at limit 1: each holder waits until
// the other has queued, holds for hold, then releases; the handoff is the
// time from its Release call to the other's Acquire returning.
func handoff(ctx context.Context, e *env, im impl, n int, hold time.Duration) ([]time.Duration, error) {
	name := e.Name("handoff")
	as, err := e.workers(ctx, im, name, 1, 2)
	defer closeAll(as)
	if err != nil {
		return nil, err
	}
	watcher, err := e.Client()
	if err != nil {
		return nil, err
	}
	prefix, waitingKeys := im.waiting(name)
	countKeys := func(ctx context.Context) int {
		resp, err := watcher.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return 0
		}
		return int(resp.Count)
	}
	var (
		mu       sync.Mutex
		released time.Time
		samples  []time.Duration
		stop     atomic.Bool
		firstErr error
		wg       sync.WaitGroup
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
	for _, a := range as {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done() {
				if err := a.Lock(wctx); err != nil {
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
				// Release only once the other worker waits: a waiter
				// queuing exposes no event to wait on, so poll.
				for !done() && countKeys(wctx) < waitingKeys {
					bench.Sleep(wctx, 200*time.Microsecond)
				}
				if !done() && hold > 0 {
					bench.Sleep(wctx, hold)
				}
				mu.Lock()
				released = time.Now()
				mu.Unlock()
				if err := a.Unlock(context.WithoutCancel(wctx)); err != nil {
					fail(err)
					return
				}
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
