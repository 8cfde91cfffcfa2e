package scalebench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/session"
)

// locksStats is what one implementation measured at one L.
type locksStats struct {
	acquired   int64
	latencies  []time.Duration
	elapsed    time.Duration
	maxKeys    int64
	leases     int
	perHeld    float64 // client goroutines per held lock
	keysAfter  int64
	leaseAfter int
	// goroutinesAfter is the goroutines left once sessions and clients
	// closed, against before the step (in-process server included).
	goroutinesAfter int
	win             windowResult
}

// shared is one session (one process's) and the names its workers hold
// or wait for: a process never takes the same name twice at once.
type shared struct {
	client *clientv3.Client
	ck     *session.Session
	etcd   *concurrency.Session
	mu     sync.Mutex
	inUse  map[int]bool
}

// pick returns a random name index in [0, l) that this session does not use.
func (s *shared) pick(l int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		i := rand.N(l)
		if !s.inUse[i] {
			s.inUse[i] = true
			return i
		}
	}
}

func (s *shared) put(i int) {
	s.mu.Lock()
	delete(s.inUse, i)
	s.mu.Unlock()
}

// locker makes a locker on name for one acquisition (coordkit: a Mutex on
// the shared session, closed after Unlock; concurrency: a Mutex on the
// shared concurrency.Session).
func (s *shared) locker(im int, name string) (bench.Locker, error) {
	if im == 0 {
		m, err := lock.New(s.client, name, lock.WithSession(s.ck))
		if err != nil {
			return nil, err
		}
		return &bench.CoordkitMutex{M: m}, nil
	}
	return &bench.EtcdMutex{M: concurrency.NewMutex(s.etcd, name)}, nil
}

// locksRun is a many-locks measurement for tests (coordkit only).
type locksRun struct {
	Acquired              int64
	GoroutinesPerHeldLock float64
	KeysAfter             int64
	LeasesAfter           int
	GoroutinesAfter       int
}

// measureLocks runs the many-locks step once against endpoints (coordkit
// only): workers sharing sessions take and release random names among l,
// each worker rounds times.
func measureLocks(ctx context.Context, endpoints []string, l, workers, sessions, rounds int) (locksRun, error) {
	e := &env{endpoints: endpoints, members: 1}
	defer e.closeClients()
	st, err := locksOnce(ctx, e, 0, l, workers, sessions, rounds, 0)
	return locksRun{Acquired: st.acquired, GoroutinesPerHeldLock: st.perHeld, KeysAfter: st.keysAfter, LeasesAfter: st.leaseAfter, GoroutinesAfter: st.goroutinesAfter}, err
}

func (r *runner) locksCurve(ctx context.Context, e *env, l int) error {
	impls := []int{0, 1}
	if r.o.SkipConcurrency {
		impls = impls[:1]
	}
	var st [2]locksStats
	for _, im := range impls {
		r.progress("many locks L=%d, %d members, %s: %d workers on %d sessions for %s", l, e.members, implName[im], r.o.Workers, r.o.Sessions, r.o.Duration)
		s, err := locksOnce(ctx, e, im, l, r.o.Workers, r.o.Sessions, 0, r.o.Duration)
		if err != nil {
			return fmt.Errorf("%s: %w", implName[im], err)
		}
		st[im] = s
	}
	pt := pointL(l)
	add := func(metric, unit string, f func(locksStats) float64) {
		row := Row{Curve: CurveLocks, Members: e.members, Point: pt, X: float64(l), Metric: metric, Unit: unit,
			Coordkit: Value(f(st[0])), EtcdConcurrency: nan}
		if len(impls) > 1 {
			row.EtcdConcurrency = Value(f(st[1]))
		}
		r.add(row)
	}
	add("acquisitions_per_s", "per_s", func(s locksStats) float64 { return float64(s.acquired) / s.elapsed.Seconds() })
	add("lock_p50_ms", "ms", func(s locksStats) float64 { return bench.Ms(bench.Percentile(s.latencies, 0.5)) })
	add("lock_p99_ms", "ms", func(s locksStats) float64 { return bench.Ms(bench.Percentile(s.latencies, 0.99)) })
	add("server_keys_max", "count", func(s locksStats) float64 { return float64(s.maxKeys) })
	add("server_leases", "count", func(s locksStats) float64 { return float64(s.leases) })
	add("watchers_max", "count", func(s locksStats) float64 { return s.win.maxWatchers })
	add("cpu_percent", "%", func(s locksStats) float64 { return s.win.cpuPercent() })
	add("goroutines_per_held_lock", "count", func(s locksStats) float64 { return s.perHeld })
	add("keys_left_after", "count", func(s locksStats) float64 { return float64(s.keysAfter) })
	add("leases_left_after", "count", func(s locksStats) float64 { return float64(s.leaseAfter) })
	add("goroutines_left_after", "count", func(s locksStats) float64 { return float64(s.goroutinesAfter) })
	return nil
}

// locksOnce has workers, spread over sessions (each its own client),
// take random names among l, each held by at most one worker of a session
// at a time, lock and unlock them for d. Then, with the loop stopped, H =
// min(workers, l) workers each hold one distinct name at once, and the
// goroutines this adds, divided by H, are the goroutines per held lock.
// Finally the sessions close and what is left on the server is counted.
func locksOnce(ctx context.Context, e *env, im, l, workers, sessions, minEach int, d time.Duration) (locksStats, error) {
	var st locksStats
	settle()
	gor0 := runtime.NumGoroutine()
	name := e.name(fmt.Sprintf("locks%d", l))
	prefix := name + "/"
	clients, err := e.newClients(sessions + 1)
	defer e.release(clients)
	if err != nil {
		return st, err
	}
	observer := clients[sessions]
	leases0, err := countLeases(ctx, observer)
	if err != nil {
		return st, err
	}
	ss := make([]*shared, sessions)
	closeSessions := func() {
		for _, s := range ss {
			if s == nil {
				continue
			}
			if s.ck != nil {
				_ = s.ck.Close()
			}
			if s.etcd != nil {
				_ = s.etcd.Close()
			}
		}
	}
	defer closeSessions()
	for i := range ss {
		s := &shared{client: clients[i], inUse: map[int]bool{}}
		ss[i] = s
		if im == 0 {
			if s.ck, err = session.New(ctx, clients[i], session.WithTTL(10*time.Second)); err != nil {
				return st, err
			}
		} else {
			if s.etcd, err = concurrency.NewSession(clients[i], concurrency.WithTTL(10), concurrency.WithContext(context.WithoutCancel(ctx))); err != nil {
				return st, err
			}
		}
	}
	lockName := func(i int) string { return fmt.Sprintf("%s/%d", name, i) }

	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		acquired atomic.Int64
		maxKeys  atomic.Int64
	)
	start := time.Now()
	end := start.Add(d)
	// With minEach, a worker goes on past d until it has acquired minEach
	// times (tests: counts that do not depend on the machine's speed);
	// otherwise d's end interrupts the Locks still waiting.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if minEach == 0 {
		t := time.AfterFunc(d, cancel)
		defer t.Stop()
	}
	win := startWindow(wctx, func() {
		if n, err := countKeys(wctx, observer, prefix); err == nil && n > maxKeys.Load() {
			maxKeys.Store(n)
		}
	})
	lat := make([][]time.Duration, workers)
	for wi := range workers {
		s := ss[wi%sessions]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; wctx.Err() == nil && (n < minEach || time.Now().Before(end)); n++ {
				i := s.pick(l)
				err := func() error {
					defer s.put(i)
					lk, err := s.locker(im, lockName(i))
					if err != nil {
						return err
					}
					defer lk.Close()
					t0 := time.Now()
					if err := lk.Lock(wctx); err != nil {
						return err
					}
					t1 := time.Now()
					if t1.Before(end) || minEach > 0 {
						acquired.Add(1)
						lat[wi] = append(lat[wi], t1.Sub(t0))
					}
					return lk.Unlock(context.WithoutCancel(wctx))
				}()
				if err != nil {
					if wctx.Err() == nil {
						mu.Lock()
						firstErr = errors.Join(firstErr, err)
						mu.Unlock()
						cancel()
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	st.win = win.stop()
	st.elapsed = d
	st.acquired = acquired.Load()
	for _, ls := range lat {
		st.latencies = append(st.latencies, ls...)
	}
	st.maxKeys = maxKeys.Load()
	if firstErr != nil {
		return st, firstErr
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	if n, err := countLeases(ctx, observer); err == nil {
		st.leases = n - leases0
	}

	// Goroutines per held lock: H workers hold one distinct name each.
	// Fresh names: a Lock the loop's deadline interrupted can leave a key
	// behind (concurrency.Mutex does, when the interrupted request was its
	// put), and it would block these until its session closes. The count
	// does not depend on L: what it checks is that the loop over L names
	// left nothing per name behind that a held lock then carries.
	h := workers
	hctx, hcancel := context.WithTimeout(ctx, 30*time.Second)
	defer hcancel()
	heldName := func(i int) string { return fmt.Sprintf("%s/held-%d", name, i) }
	if st.perHeld, err = heldGoroutines(hctx, ss, im, h, heldName); err != nil {
		return st, err
	}

	closeSessions()
	ss = nil
	if st.keysAfter, err = countKeys(ctx, observer, prefix); err != nil {
		return st, err
	}
	if n, err := countLeases(ctx, observer); err == nil {
		st.leaseAfter = n - leases0
	}
	e.release(clients)
	settle()
	st.goroutinesAfter = runtime.NumGoroutine() - gor0
	return st, nil
}

// heldGoroutines measures the goroutines a held lock adds: it first holds
// one lock per session (which opens each client's watch stream, a cost per
// connection, not per lock), then h more, and returns the goroutines those
// h added, divided by h.
func heldGoroutines(ctx context.Context, ss []*shared, im, h int, lockName func(int) string) (float64, error) {
	var ls []bench.Locker
	defer func() {
		for _, l := range ls {
			_ = l.Unlock(context.WithoutCancel(ctx))
			l.Close()
		}
	}()
	take := func(i int) error {
		l, err := ss[i%len(ss)].locker(im, lockName(i))
		if err != nil {
			return err
		}
		if err := l.Lock(ctx); err != nil {
			l.Close()
			return err
		}
		ls = append(ls, l)
		return nil
	}
	for i := range ss {
		if err := take(i); err != nil {
			return 0, err
		}
	}
	settle()
	base := runtime.NumGoroutine()
	for i := range h {
		if err := take(len(ss) + i); err != nil {
			return 0, err
		}
	}
	settle()
	return float64(runtime.NumGoroutine()-base) / float64(h), nil
}

// settle waits, up to two seconds, until the number of goroutines has
// stayed the same for 100ms: goroutines of closed watches and finished
// requests end shortly after the call that ended them returned.
func settle() {
	last, same := runtime.NumGoroutine(), 0
	for i := 0; i < 200 && same < 10; i++ {
		time.Sleep(10 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
	}
}
