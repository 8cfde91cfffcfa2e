package semaphore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/semaphore"
	"github.com/coordkit/coordkit/session"
)

// etcd is the member this package's tests share, each under a prefix of
// its own; Examples use it too.
var etcd etcdtest.Shared

func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m, &etcd)) }

func testCtx(t *testing.T) context.Context { return etcdtest.Ctx(t, 60*time.Second) }

func newSem(t *testing.T, cli *clientv3.Client, name string, limit int, opts ...semaphore.Option) *semaphore.Semaphore {
	t.Helper()
	s, err := semaphore.New(cli, name, limit, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func waitingSem(t *testing.T, cli *clientv3.Client, name string, limit int, opts ...semaphore.Option) (*semaphore.Semaphore, <-chan semaphore.Waiting) {
	ch := make(chan semaphore.Waiting, 16)
	opts = append(opts, semaphore.WithOnWait(func(w semaphore.Waiting) { ch <- w }))
	return newSem(t, cli, name, limit, opts...), ch
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return etcdtest.Recv(t, ch, what, 15*time.Second)
}

type result struct {
	h   *semaphore.Held
	err error
	at  time.Time
}

func acquireAsync(ctx context.Context, s *semaphore.Semaphore) <-chan result {
	ch := make(chan result, 1)
	go func() {
		h, err := s.Acquire(ctx)
		ch <- result{h, err, time.Now()}
	}()
	return ch
}

func notYet(t *testing.T, ch <-chan result, what string) {
	t.Helper()
	etcdtest.NotYet(t, ch, what, 200*time.Millisecond)
}

// countHolders follows every revision of the slot keys through one watch
// from rev and records the most slot keys alive at once.
func countHolders(t *testing.T, cli *clientv3.Client, slotsPfx string, rev int64) (stop func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		live := map[string]bool{}
		most := 0
		for wr := range cli.Watch(ctx, slotsPfx, clientv3.WithPrefix(), clientv3.WithRev(rev)) {
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.PUT {
					live[string(ev.Kv.Key)] = true
				} else {
					delete(live, string(ev.Kv.Key))
				}
			}
			// All events of one revision come in one response.
			most = max(most, len(live))
		}
		done <- most
	}()
	return func() int { cancel(); return <-done }
}

// Many workers, limit 3: never more than 3 inside (counted by the test and
// by replaying etcd's revisions), never two in one slot, and tokens grow per
// slot.
func TestSemaphoreNeverMoreThanLimit(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	const limit, workers, rounds = 3, 7, 3
	start, err := cli.Get(ctx, "x")
	require.NoError(t, err)
	stop := countHolders(t, cli, "sem/slots/", start.Header.Revision+1)

	var mu sync.Mutex
	inside, most := 0, 0
	// full closes when limit holders were inside at once; a holder stays
	// until then, so that the test shows the slots all used whatever the
	// machine's load, and the other workers meanwhile try to get in.
	full := make(chan struct{})
	inSlot := map[int]bool{}
	lastToken := map[int]fencing.Token{}
	var violations []string
	var wg sync.WaitGroup
	for w := range workers {
		s := newSem(t, srv.Client(t), "sem", limit)
		wg.Go(func() {
			for range rounds {
				h, err := s.Acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				inside++
				most = max(most, inside)
				if inside == limit && most == limit && !isClosed(full) {
					close(full)
				}
				if h.Slot() < 0 || h.Slot() >= limit || inSlot[h.Slot()] {
					violations = append(violations, fmt.Sprintf("worker %d got slot %d (taken: %v)", w, h.Slot(), inSlot[h.Slot()]))
				}
				if h.Token() <= lastToken[h.Slot()] {
					violations = append(violations, fmt.Sprintf("slot %d token %d after %d", h.Slot(), h.Token(), lastToken[h.Slot()]))
				}
				inSlot[h.Slot()], lastToken[h.Slot()] = true, h.Token()
				mu.Unlock()
				select {
				case <-full:
				case <-time.After(30 * time.Second):
					t.Error("the slots were never all used within 30s: the test proves little")
				}
				time.Sleep(50 * time.Millisecond) // give others room to (wrongly) enter; not a wait for an event
				mu.Lock()
				inside--
				inSlot[h.Slot()] = false
				mu.Unlock()
				if err := h.Release(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	require.Empty(t, violations)
	require.LessOrEqual(t, most, limit)
	require.Equal(t, limit, most, "the slots were never all used: the test proves little")
	require.LessOrEqual(t, stop(), limit, "etcd had more slot keys than the limit at some revision")
}

func TestSemaphoreFIFO(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	a := newSem(t, cli, "fifo", 2)
	b := newSem(t, cli, "fifo", 2)
	ha, err := a.Acquire(ctx)
	require.NoError(t, err)
	hb, err := b.TryAcquire(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []int{0, 1}, []int{ha.Slot(), hb.Slot()})

	const n = 4
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		s, waiting := waitingSem(t, srv.Client(t), "fifo", 2)
		wg.Go(func() {
			h, err := s.Acquire(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			if err := h.Release(ctx); err != nil {
				t.Error(err)
			}
		})
		recv(t, waiting, "waiter "+strconv.Itoa(i))
	}
	require.NoError(t, ha.Release(ctx))
	require.NoError(t, hb.Release(ctx))
	wg.Wait()
	close(order)
	var got []int
	for i := range order {
		got = append(got, i)
	}
	// With two slots, waiters 2k and 2k+1 may finish in either order; the
	// grants are in order, which the first waiter being first shows.
	require.Len(t, got, n)
	require.Contains(t, got[:2], 0)
	require.Contains(t, got[:3], 1)
}

// A release wakes the head of the queue only, and its grant wakes the next
// waiter only: waiters further back never look again until their turn.
func TestSemaphoreNoHerd(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	var mu sync.Mutex
	looks := map[string]int{}
	traced := primitive.WithTrace(ctx, &primitive.Trace{OnLook: func(key string) {
		mu.Lock()
		looks[key]++
		mu.Unlock()
	}})
	lookCount := func(key string) int {
		mu.Lock()
		defer mu.Unlock()
		return looks[key]
	}
	holder := newSem(t, cli, "herd", 1)
	h, err := holder.Acquire(ctx)
	require.NoError(t, err)
	const n = 5
	gots := make([]<-chan result, n)
	keys := make([]string, n)
	for i := range n {
		s, waiting := waitingSem(t, srv.Client(t), "herd", 1)
		gots[i] = acquireAsync(traced, s)
		keys[i] = recv(t, waiting, "waiter").Key
	}
	for i := range n {
		require.NoError(t, h.Release(ctx))
		r := recv(t, gots[i], "waiter in order")
		require.NoError(t, r.err)
		for j := i + 2; j < n; j++ {
			require.Equal(t, 1, lookCount(keys[j]), "release %d woke waiter %d, which is not next", i, j)
		}
		h = r.h
	}
	require.NoError(t, h.Release(ctx))
}

func TestSemaphoreTryAcquireTokenScope(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	a := newSem(t, cli, "try", 1, semaphore.WithPrefix("ns/"))
	b := newSem(t, cli, "try", 1, semaphore.WithPrefix("ns/"))
	ha, err := a.TryAcquire(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, ha.Slot())
	require.Equal(t, "ns/try/slots/0", ha.Scope(), "the scope is the slot's key: the prefix is part of it")
	require.Equal(t, "ns/try/slots/0", ha.Key())
	etcdtest.RequireTokenOf(t, cli, ha, nil)

	_, err = b.TryAcquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrNoSlot)
	_, err = a.TryAcquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrNoSlot, "a Semaphore holds one slot at a time")
	q, err := cli.Get(ctx, "ns/try/queue/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Empty(t, q.Kvs, "TryAcquire must remove its queue key")

	require.NoError(t, ha.Release(ctx))
	require.ErrorIs(t, ha.Release(ctx), session.ErrNotHeld)
	hb, err := b.TryAcquire(ctx)
	require.NoError(t, err)
	etcdtest.RequireTokenOf(t, cli, hb, ha)
	require.NoError(t, hb.Release(ctx))
}

// A conflicting limit is refused; SetLimit changes it for new grants while
// holders keep their slots.
func TestSemaphoreLimitChange(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	a := newSem(t, cli, "limit", 2)
	b := newSem(t, srv.Client(t), "limit", 2)
	ha, err := a.Acquire(ctx)
	require.NoError(t, err)
	hb, err := b.Acquire(ctx)
	require.NoError(t, err)

	c3 := newSem(t, srv.Client(t), "limit", 3)
	_, err = c3.Acquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrLimitMismatch)
	require.ErrorContains(t, err, "has limit 2 in etcd, this Semaphore has 3")

	require.NoError(t, semaphore.SetLimit(ctx, cli, "limit", 1))
	require.True(t, ha.Alive() && hb.Alive(), "holders keep their slots")
	c1, waiting := waitingSem(t, srv.Client(t), "limit", 1)
	got := acquireAsync(ctx, c1)
	recv(t, waiting, "c1 waiting")
	require.NoError(t, ha.Release(ctx))
	notYet(t, got, "c1 (one holder left, new limit 1)")
	require.NoError(t, hb.Release(ctx))
	r := recv(t, got, "c1")
	require.NoError(t, r.err)
	require.Equal(t, 0, r.h.Slot())

	_, err = a.Acquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrLimitMismatch, "the old limit is refused after SetLimit")
	st, err := primitive.ReadSemaphore(ctx, cli, primitive.Config{Kind: primitive.KindSemaphore, Name: "limit"})
	require.NoError(t, err)
	require.Equal(t, 1, st.Limit)
	require.NoError(t, r.h.Release(ctx))
}

// Revoking a holder's lease: it learns of the loss, the next waiter gets the
// slot with a larger token, and a late Release does not touch it.
func TestSemaphoreLoss(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	a := newSem(t, cli, "loss", 1)
	b, waiting := waitingSem(t, srv.Client(t), "loss", 1)
	ha, err := a.Acquire(ctx)
	require.NoError(t, err)
	got := acquireAsync(ctx, b)
	recv(t, waiting, "b waiting")
	_, err = cli.Revoke(ctx, ha.Lease())
	require.NoError(t, err)
	r := recv(t, got, "b")
	require.NoError(t, r.err)
	recv(t, ha.Lost(), "a's loss")
	require.ErrorIs(t, ha.Err(), session.ErrLost)
	require.ErrorIs(t, context.Cause(ha.Context()), session.ErrLost)
	require.False(t, ha.Alive())
	require.Equal(t, ha.Slot(), r.h.Slot())
	require.Greater(t, r.h.Token(), ha.Token())
	err = ha.Release(ctx)
	require.ErrorIs(t, err, session.ErrNotHeld)
	require.ErrorIs(t, err, session.ErrLost)
	require.True(t, r.h.Alive())
	resp, err := cli.Get(ctx, r.h.Key())
	require.NoError(t, err)
	require.EqualValues(t, r.h.Token(), resp.Kvs[0].CreateRevision, "the late Release deleted the next holder's slot")
	// The lost slot's guard fails, the successor's holds (was
	// TestSemHeldIsOwnerGuardsTxn; the guard itself is session's HeldKey:
	// TestHeldKeyTxnGuardedByOwnership).
	_, err = ha.Txn(ctx, clientv3.OpPut("loss-data", "a"))
	require.ErrorIs(t, err, session.ErrNotOwner)
	_, err = r.h.Txn(ctx, clientv3.OpPut("loss-data", "b"))
	require.NoError(t, err)
	require.NoError(t, r.h.Release(ctx))

	// The slot key deleted behind the holder's back is a loss too.
	h, err := a.Acquire(ctx)
	require.NoError(t, err)
	_, err = cli.Delete(ctx, h.Key())
	require.NoError(t, err)
	recv(t, h.Lost(), "loss on delete")
	require.ErrorIs(t, h.Err(), session.ErrKeyGone)
}

// A waiter whose lease is revoked gets ErrSessionExpired, never a slot; a
// cancelled Acquire leaves no key behind.
func TestSemaphoreWaiterEnds(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	a := newSem(t, cli, "wend", 1)
	ha, err := a.Acquire(ctx)
	require.NoError(t, err)

	b, waiting := waitingSem(t, srv.Client(t), "wend", 1)
	got := acquireAsync(ctx, b)
	w := recv(t, waiting, "b waiting")
	resp, err := cli.Get(ctx, w.Key)
	require.NoError(t, err)
	_, err = cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	require.NoError(t, err)
	r := recv(t, got, "b to fail")
	require.ErrorIs(t, r.err, session.ErrGoneWhileWaiting)
	require.Nil(t, r.h)

	c, cWaiting := waitingSem(t, srv.Client(t), "wend", 1)
	cctx, cancel := context.WithCancel(ctx)
	got = acquireAsync(cctx, c)
	recv(t, cWaiting, "c waiting")
	cancel()
	require.ErrorIs(t, recv(t, got, "c to end").err, context.Canceled)
	st, err := primitive.ReadSemaphore(ctx, cli, primitive.Config{Kind: primitive.KindSemaphore, Name: "wend"})
	require.NoError(t, err)
	require.Empty(t, st.Waiters, "a cancelled Acquire must remove its queue key")
	require.Len(t, st.Holders, 1)
	require.NoError(t, ha.Release(ctx))
}

// After a slot's holder is lost the next holder waits the lock delay; after
// a clean release it does not (etcdtest.CheckLockDelay, as for locks).
func TestSemaphoreLockDelay(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	etcdtest.CheckLockDelay(t, cli, 700*time.Millisecond, func(t *testing.T, name string, delay time.Duration) etcdtest.DelayPair {
		a := newSem(t, srv.Client(t), name, 1)
		b, waiting := waitingSem(t, srv.Client(t), name, 1, semaphore.WithLockDelay(delay))
		held := func(s *semaphore.Semaphore) func(context.Context) (etcdtest.Held, error) {
			return func(ctx context.Context) (etcdtest.Held, error) {
				h, err := s.Acquire(ctx)
				if err != nil {
					return nil, err
				}
				return h, nil
			}
		}
		return etcdtest.DelayPair{Hold: held(a), Wait: held(b), Waiting: func() { recv(t, waiting, "waiter") }}
	})
}

func TestSemaphoreStatus(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	st, err := primitive.ReadSemaphore(ctx, cli, primitive.Config{Kind: primitive.KindSemaphore, Name: "st"})
	require.NoError(t, err)
	require.False(t, st.Held())
	a := newSem(t, cli, "st", 2, semaphore.WithTTL(30*time.Second))
	b := newSem(t, srv.Client(t), "st", 2)
	ha, err := a.Acquire(ctx)
	require.NoError(t, err)
	hb, err := b.Acquire(ctx)
	require.NoError(t, err)
	c, waiting := waitingSem(t, srv.Client(t), "st", 2)
	got := acquireAsync(ctx, c)
	w := recv(t, waiting, "c waiting")

	st, err = primitive.ReadSemaphore(ctx, cli, primitive.Config{Kind: primitive.KindSemaphore, Name: "st"})
	require.NoError(t, err)
	require.Equal(t, 2, st.Limit)
	require.Len(t, st.Holders, 2)
	require.Equal(t, ha.Key(), st.Holders[0].Key)
	require.Equal(t, 0, st.Holders[0].Slot)
	require.Equal(t, ha.Token(), st.Holders[0].Token)
	require.Equal(t, ha.Lease(), st.Holders[0].Lease)
	require.Greater(t, st.Holders[0].TTL, time.Duration(0))
	require.Equal(t, 1, st.Holders[1].Slot)
	require.Len(t, st.Waiters, 1)
	require.Equal(t, w.Key, st.Waiters[0].Key)
	require.NoError(t, ha.Release(ctx))
	r := recv(t, got, "c")
	require.NoError(t, r.err)
	require.NoError(t, r.h.Release(ctx))
	require.NoError(t, hb.Release(ctx))
}

func TestSemaphoreNewValidates(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	_, err := semaphore.New(cli, "", 1)
	require.ErrorIs(t, err, semaphore.ErrInvalid)
	_, err = semaphore.New(cli, "x", 0)
	require.ErrorIs(t, err, semaphore.ErrInvalid)
	_, err = semaphore.New(nil, "x", 1)
	require.Error(t, err)
}

// Per-slot fencing with the reference resource, unchanged: a holder of slot
// 0 that lost its slot is refused once the next holder of slot 0 fenced;
// the holder of slot 1 is not affected.
func TestSemaphoreFencingPerSlot(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	res, err := fencing.StartLocal(fencing.ResourceConfig{DataDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Close() })
	rc := res.Client(10 * time.Second)

	a := newSem(t, srv.Client(t), "fenced", 2)
	b := newSem(t, srv.Client(t), "fenced", 2)
	ha, err := a.Acquire(ctx)
	require.NoError(t, err)
	hb, err := b.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, "fenced/slots/0", ha.Scope())
	require.Equal(t, "fenced/slots/1", hb.Scope())
	_, err = rc.Put(ctx, "a", "1", ha.Token(), ha.Scope())
	require.NoError(t, err)
	_, err = rc.Put(ctx, "b", "1", hb.Token(), hb.Scope())
	require.NoError(t, err)

	c, waiting := waitingSem(t, srv.Client(t), "fenced", 2)
	got := acquireAsync(ctx, c)
	recv(t, waiting, "c waiting")
	_, err = cli.Revoke(ctx, ha.Lease()) // a is frozen; its slot goes to c
	require.NoError(t, err)
	r := recv(t, got, "c")
	require.NoError(t, r.err)
	require.Equal(t, ha.Slot(), r.h.Slot())
	_, err = rc.Fence(ctx, r.h.Token(), r.h.Scope())
	require.NoError(t, err)

	_, err = rc.Put(ctx, "a", "late", ha.Token(), ha.Scope())
	require.ErrorIs(t, err, fencing.ErrStale, "the lost holder of slot 0 must be refused")
	_, err = rc.Put(ctx, "b", "2", hb.Token(), hb.Scope())
	require.NoError(t, err, "slot 1 is not affected by slot 0's handoff")
	require.NoError(t, r.h.Release(ctx))
	require.NoError(t, hb.Release(ctx))
}

// With keepalives that never get through, the holder is told at its local
// deadline, while etcd still has its slot key: nobody else can have the slot.
func TestSemaphoreLossOnLocalDeadlineBeforeServerExpiry(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	s := newSem(t, cli, "deadline", 1, semaphore.WithTTL(2*time.Second),
		semaphore.WithSessionOptions(session.WithKeepAliveInterval(time.Hour)))
	h, err := s.Acquire(ctx)
	require.NoError(t, err)
	recv(t, h.Lost(), "loss")
	require.ErrorIs(t, h.Err(), session.ErrExpired)
	resp, err := cli.Get(ctx, h.Key())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "the server must still hold the slot when loss is signalled")
	require.ErrorIs(t, h.Release(ctx), session.ErrLost)
	resp, err = cli.Get(ctx, h.Key())
	require.NoError(t, err)
	require.Empty(t, resp.Kvs)
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
