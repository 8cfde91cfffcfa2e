package rwlockbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	recipe "go.etcd.io/etcd/client/v3/experimental/recipes"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/lock"
)

// ErrOptions is returned by Run for options it cannot run with.
var ErrOptions = errors.New("rwlockbench: invalid options")

// Options bound a run.
type Options struct {
	Batches  int           // writer→readers batches measured per implementation
	Readers  int           // readers queued behind the writer in each batch (1..64)
	Handoffs int           // writer handoffs measured per implementation
	Duration time.Duration // length of each mixed run (8 readers + 2 writers)
	Hold     time.Duration // how long a holder keeps the lock after its waiters queued
	NoFsync  bool          // run etcd without fsync (faster, not what users run)
	// Progress receives one line per step ("bench rwlock: ..."); nil discards.
	Progress io.Writer
}

// Mixed is the mix of the throughput run: readers and writers looping.
const (
	MixedReaders = 8
	MixedWriters = 2
)

// Validate reports the first option Run cannot use, wrapping ErrOptions.
func (o Options) Validate() error {
	switch {
	case o.Batches < 1:
		return fmt.Errorf("%w: batches %d: must be positive", ErrOptions, o.Batches)
	case o.Readers < 1 || o.Readers > 64:
		return fmt.Errorf("%w: readers %d: want 1..64", ErrOptions, o.Readers)
	case o.Handoffs < 1:
		return fmt.Errorf("%w: handoffs %d: must be positive", ErrOptions, o.Handoffs)
	case o.Duration <= 0:
		return fmt.Errorf("%w: duration %s: must be positive", ErrOptions, o.Duration)
	case o.Hold < 0:
		return fmt.Errorf("%w: hold %s: must not be negative", ErrOptions, o.Hold)
	}
	return nil
}

// Row is one metric measured for both implementations.
type Row struct {
	Metric      string  `json:"metric"`
	Coordkit    float64 `json:"coordkit"`
	EtcdRecipes float64 `json:"etcd_recipes"`
	Unit        string  `json:"unit"`
}

// Result is the outcome of a run; its JSON form is coordctl bench rwlock's
// -w json contract.
type Result struct {
	Benchmark string `json:"benchmark"` // "rwlock"
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
		Title:   "rwlock benchmark: embedded single-member etcd, fsync " + fsync,
		Columns: []string{"coordkit", "etcd_recipes"},
		Ratios:  []bench.Ratio{{Of: "coordkit", To: "etcd_recipes"}},
	}
	for _, row := range r.Rows {
		t.Add(row.Metric, row.Unit, row.Coordkit, row.EtcdRecipes)
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
			fmt.Fprintf(o.Progress, "bench rwlock: "+format+"\n", args...)
		}
	}
	srv, stop, err := bench.StartEtcd(ctx, "rwlock", o.NoFsync, o.Progress)
	if err != nil {
		return Result{}, err
	}
	defer stop()
	e := &env{bench.Clients{Endpoints: srv.Endpoints()}}
	defer e.CloseAll()

	res := Result{Benchmark: "rwlock", Fsync: !o.NoFsync}
	row := func(metric, unit string) int {
		res.Rows = append(res.Rows, Row{Metric: metric, Unit: unit})
		return len(res.Rows) - 1
	}
	set := func(r int, impl int, v float64) {
		if impl == 0 {
			res.Rows[r].Coordkit = v
		} else {
			res.Rows[r].EtcdRecipes = v
		}
	}
	rb50, rb99 := row("read_batch_admit_p50_ms", "ms"), row("read_batch_admit_p99_ms", "ms")
	for i, im := range impls {
		progress("%d batches of %d readers behind a writer, %s", o.Batches, o.Readers, im.label)
		d, err := readBatches(ctx, e, im, o.Batches, o.Readers, o.Hold)
		if err != nil {
			return Result{}, fmt.Errorf("rwlockbench: read batches, %s: %w", im.label, err)
		}
		set(rb50, i, bench.Ms(bench.Percentile(d, 0.50)))
		set(rb99, i, bench.Ms(bench.Percentile(d, 0.99)))
	}
	wh50, wh99 := row("writer_handoff_p50_ms", "ms"), row("writer_handoff_p99_ms", "ms")
	for i, im := range impls {
		progress("writer handoff between two clients, %s, %d handoffs", im.label, o.Handoffs)
		d, err := writerHandoff(ctx, e, im, o.Handoffs, o.Hold)
		if err != nil {
			return Result{}, fmt.Errorf("rwlockbench: writer handoff, %s: %w", im.label, err)
		}
		set(wh50, i, bench.Ms(bench.Percentile(d, 0.50)))
		set(wh99, i, bench.Ms(bench.Percentile(d, 0.99)))
	}
	all := row(fmt.Sprintf("mixed_%dr%dw_per_s", MixedReaders, MixedWriters), "per_s")
	writes := row(fmt.Sprintf("mixed_%dr%dw_writes_per_s", MixedReaders, MixedWriters), "per_s")
	for i, im := range impls {
		progress("%d readers + %d writers, %s, %s", MixedReaders, MixedWriters, im.label, o.Duration)
		r, w, err := mixed(ctx, e, im, o.Duration)
		if err != nil {
			return Result{}, fmt.Errorf("rwlockbench: mixed, %s: %w", im.label, err)
		}
		set(all, i, r+w)
		set(writes, i, w)
	}
	return res, nil
}

// rwlocker is one participant: a bench.Locker (Lock and Unlock are the
// write side) that can also hold the lock shared. One operation at a time.
type rwlocker interface {
	bench.Locker
	RLock(ctx context.Context) error
	RUnlock(ctx context.Context) error
}

type coordkitRW struct {
	rw     *lock.RWMutex
	rh, wh *lock.Held
}

func (c *coordkitRW) RLock(ctx context.Context) (err error) { c.rh, err = c.rw.RLock(ctx); return err }
func (c *coordkitRW) RUnlock(ctx context.Context) error     { return c.rh.Unlock(ctx) }
func (c *coordkitRW) Lock(ctx context.Context) (err error)  { c.wh, err = c.rw.Lock(ctx); return err }
func (c *coordkitRW) Unlock(ctx context.Context) error      { return c.wh.Unlock(ctx) }
func (c *coordkitRW) Close()                                { _ = c.rw.Close() }

// recipeRW is etcd's recipes.RWMutex. It takes no context: ctx is ignored
// and a blocked call ends only when its client is closed.
type recipeRW struct {
	cli *clientv3.Client
	s   *concurrency.Session
	m   *recipe.RWMutex
}

func (r *recipeRW) RLock(context.Context) error   { return r.m.RLock() }
func (r *recipeRW) RUnlock(context.Context) error { return r.m.RUnlock() }
func (r *recipeRW) Lock(context.Context) error    { return r.m.Lock() }
func (r *recipeRW) Unlock(context.Context) error  { return r.m.Unlock() }
func (r *recipeRW) Close()                        { _ = r.s.Close() }

// impl builds participants of one implementation on a name.
type impl struct {
	label string
	new   func(ctx context.Context, cli *clientv3.Client, name string) (rwlocker, error)
	// deaf: calls take no context; only closing the client ends them.
	deaf bool
}

// impls are measured in this order: the Result's columns.
var impls = []impl{
	{"coordkit", func(ctx context.Context, cli *clientv3.Client, name string) (rwlocker, error) {
		rw, err := lock.NewRWMutex(cli, name, lock.WithTTL(10*time.Second))
		if err != nil {
			return nil, err
		}
		c := &coordkitRW{rw: rw}
		// Create both modes' sessions now, outside the timed part (the
		// name is free while participants are made).
		for _, step := range []func(context.Context) error{c.RLock, c.RUnlock, c.Lock, c.Unlock} {
			if err := step(ctx); err != nil {
				c.Close()
				return nil, err
			}
		}
		return c, nil
	}, false},
	{"etcd recipes", func(ctx context.Context, cli *clientv3.Client, name string) (rwlocker, error) {
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(10), concurrency.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		return &recipeRW{cli: cli, s: s, m: recipe.NewRWMutex(s, name)}, nil
	}, true},
}

// env is the embedded etcd's clients of one run.
type env struct{ bench.Clients }

// group is the participants of one measurement, each with its own client.
// Closing the clients unblocks a recipe call that will never return.
type group struct {
	ls      []rwlocker
	clients []*clientv3.Client
	stop    func() bool
}

// participants makes n participants of im on name. For an implementation
// that takes no context, the clients are closed when ctx ends: that is what
// unblocks it.
func (e *env) participants(ctx context.Context, im impl, name string, n int) (*group, error) {
	g := &group{}
	for range n {
		c, err := e.Client()
		if err != nil {
			g.close()
			return nil, err
		}
		g.clients = append(g.clients, c)
		l, err := im.new(ctx, c, name)
		if err != nil {
			g.close()
			return nil, err
		}
		g.ls = append(g.ls, l)
	}
	if im.deaf {
		g.stop = context.AfterFunc(ctx, g.closeClients)
	}
	return g, nil
}

func (g *group) closeClients() {
	for _, c := range g.clients {
		_ = c.Close()
	}
}

func (g *group) close() {
	if g.stop != nil {
		g.stop()
	}
	for _, l := range g.ls {
		l.Close()
	}
	g.closeClients()
}

// countKeys counts the keys under prefix (0 on error).
func countKeys(ctx context.Context, c *clientv3.Client, prefix string) int {
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0
	}
	return int(resp.Count)
}

// waitKeys polls until prefix has at least n keys: a waiter queuing exposes
// no event to wait on.
func waitKeys(ctx context.Context, c *clientv3.Client, prefix string, n int) error {
	for countKeys(ctx, c, prefix) < n {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		bench.Sleep(ctx, 200*time.Microsecond)
	}
	return nil
}

// queueJitter is the range of the random pause before a batch queues: one
// period of etcd's watch catch-up loop, so that a watch that starts from
// an old revision (the recipe's) meets that loop at a random phase.
const queueJitter = 100 * time.Millisecond

// readBatches has a writer hold the lock while readers queue behind it,
// then release; each sample is the time from the writer's Unlock call to
// one reader's RLock returning.
func readBatches(ctx context.Context, e *env, im impl, batches, readers int, hold time.Duration) (_ []time.Duration, err error) {
	defer cancelled(ctx, &err)
	name := e.Name("readbatch")
	// The readers' goroutines end once wctx is cancelled (coordkit) or the
	// clients are closed (the recipe); this wait, deferred first, runs after
	// both, so that none outlives the step.
	var readersDone sync.WaitGroup
	defer readersDone.Wait()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, err := e.participants(wctx, im, name, readers+1)
	if err != nil {
		return nil, err
	}
	defer g.close()
	watcher, err := e.Client()
	if err != nil {
		return nil, err
	}
	writer, rs := g.ls[0], g.ls[1:]
	var samples []time.Duration
	for range batches {
		if err := writer.Lock(wctx); err != nil {
			return nil, err
		}
		bench.Sleep(wctx, rand.N(queueJitter))
		admitted := make(chan time.Time, len(rs))
		errs := make(chan error, len(rs))
		for _, r := range rs {
			readersDone.Go(func() {
				if err := r.RLock(wctx); err != nil {
					errs <- err
					return
				}
				admitted <- time.Now()
			})
		}
		if err := waitKeys(wctx, watcher, name+"/", readers+1); err != nil {
			return nil, err
		}
		bench.Sleep(wctx, hold)
		released := time.Now()
		if err := writer.Unlock(context.WithoutCancel(wctx)); err != nil {
			return nil, err
		}
		for range rs {
			select {
			case at := <-admitted:
				samples = append(samples, at.Sub(released))
			case err := <-errs:
				return nil, err
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		for _, r := range rs {
			if err := r.RUnlock(context.WithoutCancel(wctx)); err != nil {
				return nil, err
			}
		}
	}
	return samples, nil
}

// writerHandoff has two writers take turns: each holder waits until the
// other has queued, holds for hold, then releases; the handoff is the time
// from its Unlock call to the other's Lock returning. A writer queues again
// after a random pause (see queueJitter).
func writerHandoff(ctx context.Context, e *env, im impl, n int, hold time.Duration) (_ []time.Duration, err error) {
	defer cancelled(ctx, &err)
	name := e.Name("handoff")
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, err := e.participants(wctx, im, name, 2)
	if err != nil {
		return nil, err
	}
	defer g.close()
	watcher, err := e.Client()
	if err != nil {
		return nil, err
	}
	var (
		mu       sync.Mutex
		released time.Time
		samples  []time.Duration
		stop     atomic.Bool
		firstErr error
		wg       sync.WaitGroup
	)
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
	for _, l := range g.ls {
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
				for !done() && countKeys(wctx, watcher, name+"/") < 2 {
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
				bench.Sleep(wctx, rand.N(queueJitter))
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return samples, ctx.Err()
}

// mixed has MixedReaders readers and MixedWriters writers lock and unlock
// as fast as they can for d; it returns reads and writes per second.
func mixed(ctx context.Context, e *env, im impl, d time.Duration) (reads, writes float64, err error) {
	defer cancelled(ctx, &err)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, err := e.participants(wctx, im, e.Name("mixed"), MixedReaders+MixedWriters)
	if err != nil {
		return 0, 0, err
	}
	defer g.close()
	var nr, nw atomic.Int64
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil && wctx.Err() == nil {
			firstErr = err
		}
		errMu.Unlock()
		cancel()
	}
	start := time.Now()
	end := start.Add(d)
	for i, l := range g.ls {
		write := i < MixedWriters
		lk, unlk, count := l.RLock, l.RUnlock, &nr
		if write {
			lk, unlk, count = l.Lock, l.Unlock, &nw
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wctx.Err() == nil && time.Now().Before(end) {
				if err := lk(wctx); err != nil {
					fail(err)
					return
				}
				if time.Now().Before(end) {
					count.Add(1)
				}
				if err := unlk(context.WithoutCancel(wctx)); err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, 0, firstErr
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	return float64(nr.Load()) / d.Seconds(), float64(nw.Load()) / d.Seconds(), nil
}

// cancelled makes a step's error ctx's once ctx has ended: the recipe takes
// no context, so a cancelled step ends by closing its clients, and the
// error its calls then return ("the client connection is closing") is the
// cancellation's doing.
func cancelled(ctx context.Context, err *error) {
	if *err != nil && ctx.Err() != nil {
		*err = ctx.Err()
	}
}
