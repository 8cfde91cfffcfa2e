package cli

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/lock"
)

type benchLockOptions struct {
	Iterations int
	Handoffs   int
	Duration   time.Duration
	Hold       time.Duration
	Workers    []int
	NoFsync    bool
}

// benchRow is one metric measured for both implementations.
type benchRow struct {
	Metric          string  `json:"metric"`
	Coordkit        float64 `json:"coordkit"`
	EtcdConcurrency float64 `json:"etcd_concurrency"`
	Unit            string  `json:"unit"`
}

// benchLockResult is the output of bench lock; its JSON form is the contract.
type benchLockResult struct {
	Benchmark string     `json:"benchmark"`
	Fsync     bool       `json:"fsync"`
	Rows      []benchRow `json:"rows"`
}

func (r benchLockResult) WriteSimple(w io.Writer) error {
	fsync := "on (as etcd runs by default)"
	if !r.Fsync {
		fsync = "OFF (--unsafe-no-fsync)"
	}
	fmt.Fprintf(w, "lock benchmark: embedded single-member etcd, fsync %s\n", fsync)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tcoordkit\tetcd concurrency\tunit\tcoordkit better by\t")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%s\t%s\t\n", row.Metric, row.Coordkit, row.EtcdConcurrency, row.Unit, row.ratio())
	}
	return tw.Flush()
}

// ratio is how many times better coordkit did: lower is better for
// latencies, higher for rates.
func (row benchRow) ratio() string {
	a, b := row.Coordkit, row.EtcdConcurrency
	if row.Unit != "ms" {
		a, b = b, a
	}
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", b/a)
}

func newBenchLockCmd(f *factory) *cobra.Command {
	opts := &benchLockOptions{}
	cmd := &cobra.Command{
		Use:   "lock [--iterations N] [--handoffs N] [--duration D] [--hold D] [--workers 2,8,32] [--unsafe-no-fsync]",
		Short: "Compare coordkit's lock with etcd's concurrency.Mutex",
		Long: `Start an embedded single-member etcd in a temporary directory (fsync on, as a
user would run it, unless --unsafe-no-fsync) and measure, side by side in one
run, coordkit's lock and go.etcd.io/etcd/client/v3/concurrency.Mutex:

  uncontended_p50_ms   one client locks and unlocks, median of --iterations
  handoff_p50_ms       two clients take turns; from the holder calling Unlock
  handoff_p99_ms       to the waiter's Lock returning (--handoffs samples); the
                       holder releases --hold after the waiter's key appeared,
                       and each client queues again after a random pause
  contended_N_per_s    N clients lock and unlock as fast as they can for
                       --duration: acquisitions per second

Each client has its own connection and session. concurrency.Mutex watches
its predecessor from the revision of the read that found it, which lands the
watch in etcd's unsynced group, caught up by a loop every 100ms, so its
waiter is served at that loop's next run: short critical sections (the
default --hold) pay up to 100ms per handoff, while a holder that keeps the
lock past the loop's run hands off as fast as coordkit (try --hold 150ms).
coordkit's watches are synced from the start. Results go to stdout,
progress to stderr.
-w json prints {"benchmark":"lock","fsync":BOOL,"rows":[{"metric","coordkit",
"etcd_concurrency","unit"}...]}.`,
		Example: `  coordctl bench lock
  coordctl bench lock -w json
  coordctl bench lock --iterations 500 --handoffs 300 --duration 5s`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := f.NotifyContext(cmd.Context())
			defer cancel()
			return runBenchLock(ctx, f, opts)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&opts.Iterations, "iterations", 200, "uncontended lock+unlock rounds per implementation")
	fl.IntVar(&opts.Handoffs, "handoffs", 100, "handoffs measured per implementation")
	fl.DurationVar(&opts.Duration, "duration", 3*time.Second, "length of each contended run")
	fl.DurationVar(&opts.Hold, "hold", time.Millisecond, "in the handoff test, how long the holder keeps the lock after the waiter queued")
	fl.IntSliceVar(&opts.Workers, "workers", []int{2, 8, 32}, "contending clients of each contended run")
	fl.BoolVar(&opts.NoFsync, "unsafe-no-fsync", false, "run etcd without fsync (faster, not what users run)")
	return cmd
}

func (o *benchLockOptions) validate() error {
	switch {
	case o.Iterations < 1:
		return usageErrorf("invalid --iterations %d: must be positive", o.Iterations)
	case o.Handoffs < 1:
		return usageErrorf("invalid --handoffs %d: must be positive", o.Handoffs)
	case o.Duration <= 0:
		return usageErrorf("invalid --duration %s: must be positive", o.Duration)
	case o.Hold < 0:
		return usageErrorf("invalid --hold %s: must not be negative", o.Hold)
	case len(o.Workers) == 0:
		return usageErrorf("--workers must list at least one count")
	}
	for _, w := range o.Workers {
		if w < 2 || w > 256 {
			return usageErrorf("invalid --workers %d: want 2..256", w)
		}
	}
	return nil
}

// benchLocker is what both implementations offer the benchmark.
type benchLocker interface {
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

// benchImpl builds lockers of one implementation on a name.
type benchImpl struct {
	label string
	new   func(ctx context.Context, cli *clientv3.Client, name string) (benchLocker, error)
}

var benchImpls = []benchImpl{
	{"coordkit", func(ctx context.Context, cli *clientv3.Client, name string) (benchLocker, error) {
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
	{"etcd concurrency", func(ctx context.Context, cli *clientv3.Client, name string) (benchLocker, error) {
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(10), concurrency.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		return &etcdLocker{s: s, m: concurrency.NewMutex(s, name)}, nil
	}},
}

// benchEnv is the embedded etcd and the clients of one benchmark run.
type benchEnv struct {
	srv     *etcdembed.Server
	mu      sync.Mutex
	clients []*clientv3.Client
	names   atomic.Int64
}

func (e *benchEnv) client() (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: e.srv.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.clients = append(e.clients, c)
	e.mu.Unlock()
	return c, nil
}

func (e *benchEnv) close() {
	for _, c := range e.clients {
		_ = c.Close()
	}
}

// name returns a fresh lock name, so runs do not see each other's keys.
func (e *benchEnv) name(what string) string {
	return fmt.Sprintf("bench/%s-%d", what, e.names.Add(1))
}

// lockers makes n lockers of impl on one name, each with its own client.
func (e *benchEnv) lockers(ctx context.Context, impl benchImpl, name string, n int) ([]benchLocker, error) {
	out := make([]benchLocker, 0, n)
	for range n {
		c, err := e.client()
		if err != nil {
			return out, err
		}
		l, err := impl.new(ctx, c, name)
		if err != nil {
			return out, err
		}
		out = append(out, l)
	}
	return out, nil
}

func closeAll(ls []benchLocker) {
	for _, l := range ls {
		l.Close()
	}
}

func runBenchLock(ctx context.Context, f *factory, opts *benchLockOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if err := opts.validate(); err != nil {
		return err
	}
	progress := func(format string, args ...any) { fmt.Fprintf(f.IO.ErrOut, "bench lock: "+format+"\n", args...) }

	dir, err := os.MkdirTemp("", "coordctl-bench-lock-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	progress("starting embedded etcd in %s (fsync %v)", dir, !opts.NoFsync)
	srv, err := etcdembed.Start(ctx, etcdembed.Config{DataDir: dir, UnsafeNoFsync: opts.NoFsync})
	if err != nil {
		if ctx.Err() != nil {
			return withCode(exitError, fmt.Errorf("interrupted"))
		}
		return err
	}
	defer srv.Close()
	env := &benchEnv{srv: srv}
	defer env.close()

	res := benchLockResult{Benchmark: "lock", Fsync: !opts.NoFsync}
	row := func(metric, unit string) int {
		res.Rows = append(res.Rows, benchRow{Metric: metric, Unit: unit})
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
	progress("uncontended lock+unlock, both implementations in turn, %d rounds each", opts.Iterations)
	ds, err := benchUncontended(ctx, env, opts.Iterations)
	if err != nil {
		return benchErr(ctx, err)
	}
	for i, d := range ds {
		set(unc, i, ms(percentile(d, 50)))
	}
	p50, p99 := row("handoff_p50_ms", "ms"), row("handoff_p99_ms", "ms")
	for i, impl := range benchImpls {
		progress("handoff between two clients, %s, %d handoffs", impl.label, opts.Handoffs)
		d, err := benchHandoff(ctx, env, impl, opts.Handoffs, opts.Hold)
		if err != nil {
			return benchErr(ctx, err)
		}
		set(p50, i, ms(percentile(d, 50)))
		set(p99, i, ms(percentile(d, 99)))
	}
	for _, w := range opts.Workers {
		r := row(fmt.Sprintf("contended_%d_per_s", w), "per_s")
		for i, impl := range benchImpls {
			progress("%d contending clients, %s, %s", w, impl.label, opts.Duration)
			rate, err := benchContended(ctx, env, impl, w, opts.Duration)
			if err != nil {
				return benchErr(ctx, err)
			}
			set(r, i, rate)
		}
	}
	return p.Print(res)
}

func benchErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return withCode(exitError, fmt.Errorf("interrupted"))
	}
	return fmt.Errorf("bench lock: %w", err)
}

// benchUncontended locks and unlocks n times with each implementation,
// alternating between them round by round so that both see the same
// machine (disk, other load) and neither gets all the warm-up.
func benchUncontended(ctx context.Context, env *benchEnv, n int) ([][]time.Duration, error) {
	var ls []benchLocker
	defer func() { closeAll(ls) }()
	for _, impl := range benchImpls {
		l, err := env.lockers(ctx, impl, env.name("uncontended"), 1)
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

// benchHandoff has two clients take turns: each holder waits until the
// other has queued, holds for hold, then releases; the handoff is the time
// from its Unlock call to the other's Lock returning. A client queues again
// after a random pause. That matters for concurrency.Mutex only: its waiter
// is served when etcd's 100ms catch-up loop next runs after it queued, so
// its handoff is the time from the release to that run, zero if the hold
// outlasted it.
func benchHandoff(ctx context.Context, env *benchEnv, impl benchImpl, n int, hold time.Duration) ([]time.Duration, error) {
	name := env.name("handoff")
	ls, err := env.lockers(ctx, impl, name, 2)
	defer closeAll(ls)
	if err != nil {
		return nil, err
	}
	watcher, err := env.client()
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
	for _, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
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
				// Release only once the other client waits (or we are done).
				for !stop.Load() && countKeys() < 2 {
					time.Sleep(200 * time.Microsecond)
				}
				if !stop.Load() && hold > 0 {
					time.Sleep(hold)
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
				time.Sleep(rand.N(handoffJitter))
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return samples, ctx.Err()
}

// benchContended has w clients lock and unlock as fast as they can for d
// and returns acquisitions per second.
func benchContended(ctx context.Context, env *benchEnv, impl benchImpl, w int, d time.Duration) (float64, error) {
	ls, err := env.lockers(ctx, impl, env.name(fmt.Sprintf("contended%d", w)), w)
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

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100 // nearest rank
	return s[max(i-1, 0)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
