package lockbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sys/unix"

	"github.com/coordkit/coordkit/internal/bench"
)

// uncontended locks and unlocks n times with each implementation, in
// blocks of uncontendedBlock rounds, alternating between them block by
// block, so that all see the same machine (disk, other load) and none gets
// all the warm-up. Within a block an implementation runs back to back, as a
// caller locking in a loop does: what its last unlock leaves running in the
// background (a watch's cancel and teardown) lands on its own next round,
// not on another implementation's — only the first round of a block gets
// the previous block's, which a median ignores. For an etcd implementation
// it also counts the requests its client sent during the timed rounds
// (counts[i]; nil for the others), with rpcCounter.
func uncontended(ctx context.Context, e *env, impls []impl, n int) (ds [][]time.Duration, counts []*opCounts, err error) {
	var ls []bench.Locker
	defer func() { closeAll(ls) }()
	counters := make([]*rpcCounter, len(impls))
	for i, im := range impls {
		if !im.redis && !im.pg && !im.api && !im.pyWaits {
			counters[i] = newRPCCounter()
		}
		e.count = counters[i]
		l, err := e.lockers(ctx, im, e.name("uncontended"), 1, false)
		e.count = nil
		ls = append(ls, l...)
		if err != nil {
			return nil, nil, err
		}
	}
	round := func(l bench.Locker) (time.Duration, error) {
		start := time.Now()
		if err := l.Lock(ctx); err != nil {
			return 0, err
		}
		if err := l.Unlock(ctx); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}
	const warmup = 5
	before := make([]map[string]int64, len(ls))
	for j, l := range ls {
		for range warmup {
			if _, err := round(l); err != nil {
				return nil, nil, err
			}
		}
		if counters[j] != nil {
			before[j] = counters[j].snapshot()
		}
	}
	out := make([][]time.Duration, len(ls))
	for len(out[0]) < n {
		for j, l := range ls {
			for k := 0; k < uncontendedBlock && len(out[j]) < n; k++ {
				d, err := round(l)
				if err != nil {
					return nil, nil, err
				}
				out[j] = append(out[j], d)
			}
		}
	}
	counts = make([]*opCounts, len(ls))
	for j, c := range counters {
		if c != nil {
			counts[j] = perOp(before[j], c.snapshot(), n)
		}
	}
	return out, counts, nil
}

// uncontendedBlock is the number of rounds an implementation runs back to
// back in the uncontended step.
const uncontendedBlock = 20

// handoffJitter is the range of the random pause before a client queues
// again in the handoff test: one period of etcd's watch catch-up loop.
const handoffJitter = 100 * time.Millisecond

// handoff has two clients take turns: each holder waits until the other
// waits, holds for hold, then releases; the handoff is the time from its
// Unlock call to the other's Lock returning. The releaser queues again
// once the other holds, after a random pause. That pause matters for
// concurrency.Mutex: its waiter is served when etcd's 100ms catch-up loop
// next runs after it queued, so its handoff is the time from the release
// to that run, zero if the hold outlasted it. A redsync waiter polls: its
// handoff is the rest of its retry delay. Its lockers are patient (tries
// without end) so that a waiter never gives up here.
//
// "The other waits" is the other's key under the lock's prefix in etcd
// (the etcd locks), a SET NX of the other's answered "taken" since this
// holder got the lock (redsync, whose waiters leave no trace), or a lock
// of the key in pg_locks that is not granted (the advisory lock).
func handoff(ctx context.Context, e *env, im impl, n int, hold time.Duration) (handoffs, error) {
	name := e.name("handoff")
	ls, err := e.lockers(ctx, im, name, 2, true)
	defer closeAll(ls)
	if err != nil {
		return handoffs{}, err
	}
	st := [2]*stamped{{Locker: ls[0]}, {Locker: ls[1]}}
	var watcher *clientv3.Client
	if !im.redis && !im.pg && !im.pyWaits {
		if watcher, err = e.client(); err != nil {
			return handoffs{}, err
		}
	}
	var (
		mu       sync.Mutex
		released time.Time // when the last holder called Unlock
		holder   = -1      // who holds or held last
		samples  []time.Duration
		pairs    []stampPair // the samples again, by the clients' clocks
		unlocks  [2]int      // Unlock calls made by each client
		stop     atomic.Bool
		firstErr error
		wg       sync.WaitGroup
	)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// waiting reports whether the other client (of i) waits, given the
	// other's failed tries when i got the lock.
	waiting := func(i int, triesAtLock int64) bool {
		if im.redis {
			return ls[1-i].(*redsyncLocker).hook.n.Load() > triesAtLock
		}
		if im.pyWaits {
			return ls[1-i].(*pyLocker).waits.Load() > triesAtLock
		}
		if im.pg {
			_, w, err := e.pgSessions(wctx, name)
			return err == nil && w > 0
		}
		resp, err := watcher.Get(wctx, name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count >= 2
	}
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
	for i, l := range st {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done() {
				if err := l.Lock(wctx); err != nil {
					fail(err)
					return
				}
				now := time.Now()
				var triesAtLock int64
				if im.redis {
					triesAtLock = ls[1-i].(*redsyncLocker).hook.n.Load()
				}
				if im.pyWaits {
					triesAtLock = ls[1-i].(*pyLocker).waits.Load()
				}
				mu.Lock()
				if !released.IsZero() {
					samples = append(samples, now.Sub(released))
					pairs = append(pairs, stampPair{locked: l.locked[len(l.locked)-1], by: 1 - i, unlock: unlocks[1-i] - 1})
					if len(samples) >= n {
						stop.Store(true)
					}
				}
				holder = i
				mu.Unlock()
				// Release only once the other client waits (or we are done):
				// a waiter queuing exposes no event to wait on, so poll.
				for !done() && !waiting(i, triesAtLock) {
					bench.Sleep(wctx, 200*time.Microsecond)
				}
				if !done() && hold > 0 {
					bench.Sleep(wctx, hold)
				}
				mu.Lock()
				released = time.Now()
				unlocks[i]++
				mu.Unlock()
				if err := l.Unlock(context.WithoutCancel(wctx)); err != nil {
					fail(err)
					return
				}
				// Queue again once the other holds, so that every sample is a
				// handoff (redsync would let the releaser take the lock back),
				// and at a random moment, so that the waiter's watch meets
				// etcd's 100ms catch-up loop at a random phase.
				for !done() {
					mu.Lock()
					h := holder
					mu.Unlock()
					if h != i {
						break
					}
					bench.Sleep(wctx, 200*time.Microsecond)
				}
				bench.Sleep(wctx, rand.N(handoffJitter))
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return handoffs{}, firstErr
	}
	out := handoffs{driven: samples}
	for _, p := range pairs {
		if u := st[p.by].unlocking; p.unlock < len(u) {
			out.inClient = append(out.inClient, time.Duration(p.locked-u[p.unlock]))
		}
	}
	return out, ctx.Err()
}

// handoffBlock is the number of handoffs an implementation runs before
// the next one's turn in the handoff test.
const handoffBlock = 25

// handoffsInTurn runs the handoff test of every implementation, n
// handoffs each, in blocks of handoffBlock, one implementation after the
// other and round again, so that a machine whose load changes during the
// run weighs on all of them alike (as uncontended does).
func handoffsInTurn(ctx context.Context, e *env, impls []impl, n int, hold time.Duration) ([]handoffs, error) {
	out := make([]handoffs, len(impls))
	for left := n; left > 0; left -= handoffBlock {
		for i, im := range impls {
			h, err := handoff(ctx, e, im, min(left, handoffBlock), hold)
			if err != nil {
				return nil, fmt.Errorf("lockbench: handoff, %s: %w", im.label, err)
			}
			out[i].driven = append(out[i].driven, h.driven...)
			out[i].inClient = append(out[i].inClient, h.inClient...)
		}
	}
	return out, nil
}

// handoffs are one handoff test's samples, measured two ways. driven: from
// the bench calling Unlock to Lock returning to it. inClient: from the
// releasing client's code calling its release to the waiting client's code
// seeing its acquire return, by CLOCK_MONOTONIC readings taken in the
// clients' own processes — for api_python that leaves out the pipe's round
// trips between the bench and the Python processes (writing the command,
// reading the answer), which an in-process Go locker does not pay; for the
// in-process lockers both are the same instants.
type handoffs struct{ driven, inClient []time.Duration }

// stampPair is one handoff by the clients' clocks: the acquirer's Lock
// return and the index of the releaser's (by) Unlock call.
type stampPair struct {
	locked     int64
	by, unlock int
}

// stamped records, for the handoff test, CLOCK_MONOTONIC readings of when
// each Lock returned and each Unlock was called: the locker's own (a
// pyLocker's, taken in its process) when it has them, else taken here.
type stamped struct {
	bench.Locker
	locked, unlocking []int64
}

// stamper is a locker driven in another process that reports its own
// readings of when its last Lock returned and its last Unlock was called.
type stamper interface {
	stamps() (locked, unlocking int64)
}

func (s *stamped) Lock(ctx context.Context) error {
	err := s.Locker.Lock(ctx)
	t := monotonicNow()
	if p, ok := s.Locker.(stamper); ok {
		t, _ = p.stamps()
	}
	if err == nil {
		s.locked = append(s.locked, t)
	}
	return err
}

func (s *stamped) Unlock(ctx context.Context) error {
	t := monotonicNow()
	err := s.Locker.Unlock(ctx)
	if p, ok := s.Locker.(stamper); ok {
		_, t = p.stamps()
	}
	if err == nil {
		s.unlocking = append(s.unlocking, t)
	}
	return err
}

// monotonicNow reads CLOCK_MONOTONIC, the clock Python's time.monotonic_ns
// reads on Linux (Go's time.Now keeps its monotonic reading private).
func monotonicNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// contendedResult is one contended run of one implementation.
type contendedResult struct {
	perSecond float64 // handoffs per second
	failed    int64   // Lock calls that gave up (redsync's tries ran out)
}

// contended has w clients lock and unlock as fast as they can for d and
// counts handoffs: acquisitions by another client than the last holder (a
// FIFO lock hands off on every acquisition; redsync lets the releaser take
// it back). A Lock that gives up (redsync's 32 tries ran out) is counted
// and retried, as a user's loop would.
func contended(ctx context.Context, e *env, im impl, w int, d time.Duration) (contendedResult, error) {
	ls, err := e.lockers(ctx, im, e.name("contended"), w, false)
	defer closeAll(ls)
	if err != nil {
		return contendedResult{}, err
	}
	var (
		handoffs, failed atomic.Int64
		last             atomic.Int64 // the last holder
		wg               sync.WaitGroup
		errMu            sync.Mutex
		firstErr         error
	)
	last.Store(-1)
	start := time.Now()
	wctx, cancel := bench.Window(ctx, d)
	defer cancel()
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wctx.Err() == nil {
				if err := l.Lock(wctx); err != nil {
					if wctx.Err() != nil {
						return
					}
					if gaveUp(err) {
						failed.Add(1)
						continue
					}
					errMu.Lock()
					firstErr = err
					errMu.Unlock()
					return
				}
				if prev := last.Swap(int64(i)); prev != int64(i) && prev >= 0 && time.Now().Before(start.Add(d)) {
					handoffs.Add(1)
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
		return contendedResult{}, firstErr
	}
	if err := ctx.Err(); err != nil {
		return contendedResult{}, err
	}
	return contendedResult{perSecond: float64(handoffs.Load()) / d.Seconds(), failed: failed.Load()}, nil
}
