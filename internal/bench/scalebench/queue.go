package scalebench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/lock"
)

// herdCounter counts wake-ups: reads of a waiter's predecessor after the
// first one of each Lock call.
type herdCounter struct {
	mu       sync.Mutex
	first    map[string]bool // key -> the next look is the Lock's first
	wakeups  atomic.Int64
	lastWake atomic.Int64 // UnixNano of the latest wake-up's look
}

func newHerdCounter() *herdCounter { return &herdCounter{first: map[string]bool{}} }

func (h *herdCounter) options() []lock.Option {
	return []lock.Option{
		lock.WithOnWait(func(w lock.Waiting) {
			h.mu.Lock()
			h.first[w.Key] = true
			h.mu.Unlock()
		}),
	}
}

// trace counts each look of a waiter after its first (primitive.Trace,
// carried by the context of Lock).
func (h *herdCounter) trace() *primitive.Trace {
	return &primitive.Trace{OnLook: func(key string) {
		h.mu.Lock()
		first := h.first[key]
		h.first[key] = false
		h.mu.Unlock()
		if !first {
			h.lastWake.Store(time.Now().UnixNano())
			h.wakeups.Add(1)
		}
	}}
}

// queueStats is what one implementation measured at one W.
type queueStats struct {
	handoffs []time.Duration
	// The stages of each handoff (coordkit only): the holder's Unlock
	// (its delete), from the release to the successor's look
	// (the delete's watch event reaching it), and from that look to its
	// Lock returning (the read and the grant).
	unlocks, wakes, looks []time.Duration
	herdReleases          int     // releases that woke more than one waiter
	maxWakeups            int64   // most waiters one release woke
	wakeups               int64   // all wake-ups in the measured releases
	releases              int     // measured releases
	heapPerWaiter         float64 // bytes
	gorPerWaiter          float64
	win                   windowResult
}

// queueRun is a queue-depth measurement for tests: W waiters on one lock,
// n handoffs, coordkit only.
type queueRun struct {
	Releases, Wakeups, HerdReleases int
	MaxWakeups                      int64
}

// measureQueue runs the queue-depth step once against endpoints (coordkit
// only) and returns its counts.
func measureQueue(ctx context.Context, endpoints []string, waiters, handoffs int) (queueRun, error) {
	e := &env{endpoints: endpoints, members: 1}
	defer e.closeClients()
	st, err := queueOnce(ctx, e, 0, waiters, handoffs, 0)
	return queueRun{Releases: st.releases, Wakeups: int(st.wakeups), HerdReleases: st.herdReleases, MaxWakeups: st.maxWakeups}, err
}

func (r *runner) queueCurve(ctx context.Context, e *env, w int) error {
	impls := []int{0, 1}
	if r.o.SkipConcurrency {
		impls = impls[:1]
	}
	var st [2]queueStats
	for _, im := range impls {
		r.progress("queue depth W=%d, %d members, %s: %d waiters each with its own session, %d handoffs", w, e.members, implName[im], w, r.o.Handoffs)
		s, err := queueOnce(ctx, e, im, w, r.o.Handoffs, r.o.Hold)
		if err != nil {
			return fmt.Errorf("%s: %w", implName[im], err)
		}
		st[im] = s
	}
	pt := pointW(w)
	add := func(metric, unit string, f func(queueStats) float64, onlyCoordkit bool) {
		row := Row{Curve: CurveQueue, Members: e.members, Point: pt, X: float64(w), Metric: metric, Unit: unit,
			Coordkit: Value(f(st[0])), EtcdConcurrency: nan}
		if len(impls) > 1 && !onlyCoordkit {
			row.EtcdConcurrency = Value(f(st[1]))
		}
		r.add(row)
	}
	add("handoff_p50_ms", "ms", func(s queueStats) float64 { return bench.Ms(bench.Percentile(s.handoffs, 0.5)) }, false)
	add("handoff_p99_ms", "ms", func(s queueStats) float64 { return bench.Ms(bench.Percentile(s.handoffs, 0.99)) }, false)
	stage := func(metric string, q float64, pick func(queueStats) []time.Duration) {
		add(metric, "ms", func(s queueStats) float64 { return bench.Ms(bench.Percentile(pick(s), q)) }, true)
	}
	stage("unlock_p50_ms", 0.5, func(s queueStats) []time.Duration { return s.unlocks })
	stage("unlock_p99_ms", 0.99, func(s queueStats) []time.Duration { return s.unlocks })
	stage("release_to_wake_p50_ms", 0.5, func(s queueStats) []time.Duration { return s.wakes })
	stage("release_to_wake_p99_ms", 0.99, func(s queueStats) []time.Duration { return s.wakes })
	stage("wake_to_lock_p50_ms", 0.5, func(s queueStats) []time.Duration { return s.looks })
	stage("wake_to_lock_p99_ms", 0.99, func(s queueStats) []time.Duration { return s.looks })
	add("herd_releases", "count", func(s queueStats) float64 { return float64(s.herdReleases) }, true)
	add("wakeups_per_release", "count", func(s queueStats) float64 { return float64(s.wakeups) / float64(max(s.releases, 1)) }, true)
	add("watchers_max", "count", func(s queueStats) float64 { return s.win.maxWatchers }, false)
	add("cpu_percent", "%", func(s queueStats) float64 { return s.win.cpuPercent() }, false)
	add("rss_max_mib", "MiB", func(s queueStats) float64 { return s.win.maxRSS / (1 << 20) }, false)
	add("heap_per_waiter_kib", "KiB", func(s queueStats) float64 { return s.heapPerWaiter / 1024 }, false)
	add("goroutines_per_waiter", "count", func(s queueStats) float64 { return s.gorPerWaiter }, false)
	return nil
}

var implName = []string{"coordkit", "etcd concurrency"}

// queueOnce queues w waiters (each with its own client and session) behind
// a holder on one lock, then has the participants take turns: the holder
// waits until all others are queued, holds for hold, and releases; the
// handoff is from its Unlock call to the next Lock returning. A releaser
// queues again at once, so the queue stays w deep. Wake-ups are counted
// per release: from just before one release to just before the next.
func queueOnce(ctx context.Context, e *env, im, w, handoffs int, hold time.Duration) (queueStats, error) {
	var st queueStats
	n := w + 1
	name := e.name(fmt.Sprintf("queue%d", w))
	prefix := name + "/"
	herd := newHerdCounter()

	heap0, gor0 := heapBytes(), runtime.NumGoroutine()
	clients, err := e.newClients(n + 1)
	defer e.release(clients)
	if err != nil {
		return st, err
	}
	observer := clients[n]
	ls := make([]bench.Locker, n)
	defer func() {
		for _, l := range ls {
			if l != nil {
				l.Close()
			}
		}
	}()
	for i := range n {
		if im == 0 {
			m, err := lock.New(clients[i], name, append(herd.options(), lock.WithTTL(10*time.Second))...)
			if err != nil {
				return st, err
			}
			ls[i] = &bench.CoordkitMutex{M: m}
		} else {
			s, err := concurrency.NewSession(clients[i], concurrency.WithTTL(10), concurrency.WithContext(context.WithoutCancel(ctx)))
			if err != nil {
				return st, err
			}
			ls[i] = &bench.EtcdMutex{S: s, M: concurrency.NewMutex(s, name)}
		}
	}
	if err := ls[0].Lock(ctx); err != nil {
		return st, err
	}

	wctx, cancel := context.WithCancel(primitive.WithTrace(ctx, herd.trace()))
	defer cancel()
	var (
		mu        sync.Mutex
		released  time.Time
		lastWake  int64
		firstErr  error
		stopped   atomic.Bool
		wg        sync.WaitGroup
		queueFull = make(chan struct{})
		fullOnce  sync.Once
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil && wctx.Err() == nil {
			firstErr = err
		}
		mu.Unlock()
		stopped.Store(true)
		cancel()
	}
	done := func() bool { return stopped.Load() || wctx.Err() != nil }
	var win *window
	for i, l := range ls {
		// Queue the waiters a batch at a time: a thousand sessions granted
		// and keys put at once time out on a loaded single-member etcd.
		if i > 0 && i%25 == 0 {
			if err := waitKeys(wctx, observer, prefix, int64(i)); err != nil {
				fail(err)
				break
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			held := i == 0
			for !done() {
				if !held {
					if err := l.Lock(wctx); err != nil {
						if !done() {
							fail(err)
						}
						return
					}
				}
				held = false
				now := time.Now()
				if done() {
					// Acquired after the last measured release: not measured.
					_ = l.Unlock(context.WithoutCancel(wctx))
					return
				}
				last := false
				if i == 0 && released.IsZero() {
					// The first holder: wait for the whole queue, measure
					// its memory, then start the measured run.
					if err := waitKeys(wctx, observer, prefix, int64(n)); err != nil {
						fail(err)
						return
					}
					st.heapPerWaiter = (heapBytes() - heap0) / float64(n)
					st.gorPerWaiter = float64(runtime.NumGoroutine()-gor0) / float64(n)
					win = startWindow(wctx, nil)
					fullOnce.Do(func() { close(queueFull) })
				} else {
					mu.Lock()
					st.handoffs = append(st.handoffs, now.Sub(released))
					if wake := time.Unix(0, herd.lastWake.Load()); im == 0 && wake.After(released) {
						st.wakes = append(st.wakes, wake.Sub(released))
						st.looks = append(st.looks, now.Sub(wake))
					}
					last = len(st.handoffs) >= handoffs
					mu.Unlock()
					if !last && !done() {
						if err := waitKeys(wctx, observer, prefix, int64(n)); err != nil {
							fail(err)
							return
						}
					}
				}
				if !last && !done() && hold > 0 {
					cluster.Sleep(wctx, hold)
				}
				if last {
					stopped.Store(true) // before the release: the next holder is not measured
				}
				mu.Lock()
				wk := herd.wakeups.Load()
				if !released.IsZero() {
					d := wk - lastWake
					st.wakeups += d
					st.releases++
					st.maxWakeups = max(st.maxWakeups, d)
					if d > 1 {
						st.herdReleases++
					}
				}
				lastWake = wk
				released = time.Now()
				mu.Unlock()
				if err := l.Unlock(context.WithoutCancel(wctx)); err != nil {
					fail(err)
					return
				}
				if im == 0 {
					mu.Lock()
					st.unlocks = append(st.unlocks, time.Since(released))
					mu.Unlock()
				}
				if last {
					// Enough samples: the waiters give up (and remove their keys).
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	if win != nil {
		st.win = win.stop()
	}
	if firstErr != nil {
		return st, firstErr
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	select {
	case <-queueFull:
	default:
		return st, errors.New("queue never filled")
	}
	return st, nil
}
