package lock_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/session"
)

// etcd is the member this package's tests share, each under a prefix of
// its own; Examples use it too.
var etcd etcdtest.Shared

func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m, &etcd)) }

func testCtx(t *testing.T) context.Context { return etcdtest.Ctx(t, 30*time.Second) }

func newMutex(t *testing.T, cli *clientv3.Client, name string, opts ...lock.Option) *lock.Mutex {
	t.Helper()
	m, err := lock.New(cli, name, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func keys(t *testing.T, cli *clientv3.Client, prefix string) []string {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	require.NoError(t, err)
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, string(kv.Key))
	}
	return out
}

func createRevision(t *testing.T, cli *clientv3.Client, key string) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), key)
	require.NoError(t, err)
	if len(resp.Kvs) == 0 {
		return 0
	}
	return resp.Kvs[0].CreateRevision
}

// waitingMutex returns a Mutex whose OnWait hook signals on the channel.
func waitingMutex(t *testing.T, cli *clientv3.Client, name string, opts ...lock.Option) (*lock.Mutex, <-chan lock.Waiting) {
	ch := make(chan lock.Waiting, 16)
	opts = append(opts, lock.WithOnWait(func(w lock.Waiting) { ch <- w }))
	return newMutex(t, cli, name, opts...), ch
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return etcdtest.Recv(t, ch, what, 10*time.Second)
}

// Workers increment a counter kept by the fenced resource, each under the
// lock, with a read-modify-write that the resource would expose if two ran
// at once (If-Match on the version). Every write must be admitted, the
// count must be exact and the tokens in the audit log strictly increasing.
func TestLockMutualExclusionThroughResource(t *testing.T) {
	t.Parallel()
	srv, _ := etcd.StartWithClient(t)
	res, err := fencing.NewResource(fencing.ResourceConfig{DataDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Close() })
	hs := httptest.NewServer(res)
	t.Cleanup(hs.Close)
	rc := &fencing.Client{BaseURL: hs.URL}
	ctx := testCtx(t)

	const workers, rounds = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	var inside, maxInside int
	var mu sync.Mutex
	for w := range workers {
		m := newMutex(t, srv.Client(t), "counter", lock.WithTTL(5*time.Second))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				h, err := m.Lock(ctx)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				inside++
				maxInside = max(maxInside, inside)
				mu.Unlock()
				var n int
				var opts []fencing.PutOption
				e, err := rc.Get(ctx, "n")
				switch {
				case errors.Is(err, fencing.ErrNotFound):
					opts = append(opts, fencing.IfMatch(0))
				case err != nil:
					errs <- err
				default:
					n, _ = strconv.Atoi(e.Value)
					opts = append(opts, fencing.IfMatch(e.Version))
				}
				if _, err := rc.Put(ctx, "n", strconv.Itoa(n+1), h.Token(), "counter", opts...); err != nil {
					errs <- fmt.Errorf("worker %d: %w", w, err)
				}
				mu.Lock()
				inside--
				mu.Unlock()
				if err := h.Unlock(ctx); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.Equal(t, 1, maxInside, "two holders at once")
	e, err := rc.Get(ctx, "n")
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(workers*rounds), e.Value)
	log, err := rc.Log(ctx, "counter")
	require.NoError(t, err)
	require.Len(t, log.Writes, workers*rounds)
	require.Zero(t, log.Rejected)
	for i := 1; i < len(log.Writes); i++ {
		require.Greater(t, log.Writes[i].Token, log.Writes[i-1].Token, "tokens must grow from holder to holder")
	}
}

func TestLockFIFOOrder(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	first := newMutex(t, cli, "fifo")
	h, err := first.Lock(ctx)
	require.NoError(t, err)

	const n = 5
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		m, waiting := waitingMutex(t, srv.Client(t), "fifo")
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := m.Lock(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			if err := h.Unlock(ctx); err != nil {
				t.Error(err)
			}
		}()
		recv(t, waiting, "waiter "+strconv.Itoa(i)) // queued before the next one starts
	}
	require.NoError(t, h.Unlock(ctx))
	wg.Wait()
	close(order)
	var got []int
	for i := range order {
		got = append(got, i)
	}
	require.Equal(t, []int{0, 1, 2, 3, 4}, got)
}

// coordkit and concurrency.Mutex (what etcdctl lock uses) on one name
// exclude each other, both ways round.
func TestLockInteropWithConcurrencyMutex(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	es, err := concurrency.NewSession(srv.Client(t), concurrency.WithTTL(5))
	require.NoError(t, err)
	t.Cleanup(func() { _ = es.Close() })

	t.Run("coordkit holds", func(t *testing.T) {
		m, _ := waitingMutex(t, cli, "shared")
		h, err := m.Lock(ctx)
		require.NoError(t, err)
		em := concurrency.NewMutex(es, "shared")
		require.ErrorIs(t, em.TryLock(ctx), concurrency.ErrLocked)

		got := make(chan error, 1)
		go func() { got <- em.Lock(ctx) }()
		// concurrency.Mutex queues its key; it must not get the lock while we hold it.
		require.Eventually(t, func() bool { return len(keys(t, cli, "shared/")) == 2 }, 5*time.Second, 5*time.Millisecond)
		select {
		case err := <-got:
			t.Fatalf("concurrency.Mutex got the lock while coordkit held it: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		require.NoError(t, h.Unlock(ctx))
		require.NoError(t, recv(t, got, "concurrency.Mutex lock"))
		require.NoError(t, em.Unlock(ctx))
	})
	t.Run("concurrency.Mutex holds", func(t *testing.T) {
		em := concurrency.NewMutex(es, "shared")
		require.NoError(t, em.Lock(ctx))
		m, waiting := waitingMutex(t, cli, "shared")
		_, err := m.TryLock(ctx)
		var le *lock.LockedError
		require.ErrorAs(t, err, &le)
		require.Equal(t, em.Key(), le.HolderKey)

		got := make(chan *lock.Held, 1)
		go func() {
			h, err := m.Lock(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- h
		}()
		w := recv(t, waiting, "coordkit waiting")
		require.Equal(t, em.Key(), w.HolderKey)
		require.NoError(t, em.Unlock(ctx))
		h := recv(t, got, "coordkit lock")
		require.NotNil(t, h)
		require.EqualValues(t, createRevision(t, cli, h.Key()), h.Token())
		require.NoError(t, h.Unlock(ctx))
	})
}

// The token is the holder key's create revision, not the revision at which
// the waiter learned it holds the lock, and it grows from holder to holder.
func TestLockTokenIsCreateRevision(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	a := newMutex(t, cli, "tok")
	b, waiting := waitingMutex(t, srv.Client(t), "tok")
	ha, err := a.Lock(ctx)
	require.NoError(t, err)
	etcdtest.RequireTokenOf(t, cli, ha, nil)

	got := make(chan *lock.Held, 1)
	go func() {
		h, err := b.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- h
	}()
	recv(t, waiting, "b waiting")
	// Move the revision on, so that the grant revision and the create revision differ.
	for i := range 3 {
		_, err := cli.Put(ctx, "unrelated", strconv.Itoa(i))
		require.NoError(t, err)
	}
	require.NoError(t, ha.Unlock(ctx))
	hb := recv(t, got, "b lock")
	require.NotNil(t, hb)
	cur, err := cli.Get(ctx, "unrelated")
	require.NoError(t, err)
	etcdtest.RequireTokenOf(t, cli, hb, ha)
	require.Less(t, int64(hb.Token()), cur.Header.Revision, "token must be the create revision, not a later header revision")
	require.NoError(t, hb.Unlock(ctx))
}

// Revoking the holder's lease behind its back: the holder must know it lost
// the lock no later than the next holder's Lock returns. Both learn from the
// same delete, which etcd sends to every watcher of the key at once; the
// waiter then needs one more round trip (a read) before it holds the lock,
// the holder none. In one process the two deliveries are two sockets woken
// in an order the scheduler picks, so the test allows the holder a
// scheduling tolerance; a holder that learned from its next keepalive (as
// concurrency.Mutex's does) would be seconds late.
func TestLockLossOnRevokeBeforeNextHolder(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	// With a 1-minute TTL the holder's keepalives go every 20s: a holder
	// that learned of the loss from its next keepalive (as
	// concurrency.Mutex's does) would be late by most of that, while one
	// told by the delete of its key (ErrKeyGone, below) is late by no more
	// than the scheduler's delay in waking it, which a loaded machine
	// stretches to hundreds of milliseconds.
	const tolerance = 5 * time.Second
	early := 0
	const rounds = 5
	for i := range rounds {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			a := newMutex(t, srv.Client(t), "revoke", lock.WithTTL(time.Minute))
			b, waiting := waitingMutex(t, srv.Client(t), "revoke")
			ha, err := a.Lock(ctx)
			require.NoError(t, err)
			type result struct {
				h     *lock.Held
				first bool          // ha.Lost was closed when b's Lock returned
				lag   time.Duration // else: how much later it closed
			}
			got := make(chan result, 1)
			go func() {
				h, err := b.Lock(ctx)
				at := time.Now()
				if err != nil {
					t.Error(err)
				}
				select {
				case <-ha.Lost():
					got <- result{h: h, first: true}
					return
				default:
				}
				<-ha.Lost()
				got <- result{h: h, lag: time.Since(at)}
			}()
			recv(t, waiting, "b waiting")
			_, err = cli.Revoke(ctx, ha.Lease())
			require.NoError(t, err)
			r := recv(t, got, "b lock and a's loss")
			require.NotNil(t, r.h)
			if r.first {
				early++
			}
			require.Less(t, r.lag, tolerance, "holder learned of the loss after the next holder had the lock")
			require.ErrorIs(t, ha.Err(), session.ErrLost)
			require.ErrorIs(t, ha.Err(), session.ErrKeyGone)
			<-ha.Context().Done() // cancelled right after Lost closes (HeldKey.Context)
			require.ErrorIs(t, context.Cause(ha.Context()), session.ErrLost)
			require.False(t, ha.Alive())
			require.Greater(t, r.h.Token(), ha.Token())
			err = ha.Unlock(ctx)
			require.ErrorIs(t, err, session.ErrNotHeld)
			require.ErrorIs(t, err, session.ErrLost)
			require.Equal(t, []string{r.h.Key()}, keys(t, cli, "revoke/"), "unlocking a lost lock must not touch the next holder")
			require.NoError(t, r.h.Unlock(ctx))
		})
	}
	t.Logf("holder knew first in %d of %d rounds (the rest within %s)", early, rounds, tolerance)
}

// With keepalives that never get through, the holder is told at its local
// deadline, while etcd still holds its key: nobody else can have the lock yet.
func TestLockLossOnLocalDeadlineBeforeServerExpiry(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	m := newMutex(t, cli, "deadline", lock.WithTTL(2*time.Second),
		lock.WithSessionOptions(session.WithKeepAliveInterval(time.Hour)))
	h, err := m.Lock(ctx)
	require.NoError(t, err)
	acquired := time.Now() // after the grant: the server expiry is later than acquired+TTL-(time to acquire)
	require.True(t, h.Alive())
	recv(t, h.Lost(), "loss")
	require.Less(t, time.Since(acquired), 2*time.Second)
	require.Equal(t, []string{h.Key()}, keys(t, cli, "deadline/"), "the server must still hold the key when loss is signalled")
	require.ErrorIs(t, h.Err(), session.ErrLost)
	require.ErrorIs(t, h.Err(), session.ErrExpired)
	require.False(t, h.Alive())
	// Unlocking a lost lock whose key is still there removes it (faster handoff) and says it was lost.
	require.ErrorIs(t, h.Unlock(ctx), session.ErrLost)
	require.Empty(t, keys(t, cli, "deadline/"))
	require.ErrorIs(t, h.Unlock(ctx), session.ErrNotHeld)
}

// A waiter whose own key or session vanishes gets ErrSessionExpired, never
// the lock (concurrency.Mutex can return nil there).
func TestLockWaiterSessionExpired(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts []lock.Option
		// within bounds the time from the break to ErrGoneWhileWaiting:
		// well below the default 10s TTL (an event, not an expiry), with
		// room for a loaded machine (1.3s once against a 1s bound).
		within  time.Duration
		breakIt func(t *testing.T, cli *clientv3.Client, w lock.Waiting)
	}{
		{"lease revoked", nil, 3 * time.Second, func(t *testing.T, cli *clientv3.Client, w lock.Waiting) {
			resp, err := cli.Get(context.Background(), w.Key)
			require.NoError(t, err)
			_, err = cli.Revoke(context.Background(), clientv3.LeaseID(resp.Kvs[0].Lease))
			require.NoError(t, err)
		}},
		{"key deleted", nil, 3 * time.Second, func(t *testing.T, cli *clientv3.Client, w lock.Waiting) {
			_, err := cli.Delete(context.Background(), w.Key)
			require.NoError(t, err)
		}},
		{"keepalives fail", []lock.Option{lock.WithTTL(time.Second), lock.WithSessionOptions(session.WithKeepAliveInterval(time.Hour))},
			3 * time.Second, func(*testing.T, *clientv3.Client, lock.Waiting) {}},
	}
	srv, cli := etcd.StartWithClient(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			name := "expire-" + strings.ReplaceAll(tc.name, " ", "-")
			holder := newMutex(t, cli, name)
			h, err := holder.Lock(ctx)
			require.NoError(t, err)
			m, waiting := waitingMutex(t, srv.Client(t), name, tc.opts...)
			got := make(chan error, 1)
			go func() {
				_, err := m.Lock(ctx)
				got <- err
			}()
			w := recv(t, waiting, "waiting")
			start := time.Now()
			tc.breakIt(t, cli, w)
			err = recv(t, got, "Lock to fail")
			require.ErrorIs(t, err, session.ErrGoneWhileWaiting)
			require.Less(t, time.Since(start), tc.within)
			require.Equal(t, []string{h.Key()}, keys(t, cli, name+"/"))
			require.NoError(t, h.Unlock(ctx))
		})
	}
}

// etcd-io/etcd#22082: a late Unlock of an older lock must not delete a newer
// lock of the same session on the same name: on a shared session, and on
// the Mutex's own (whose first Unlock of a lock not seen lost is a plain
// delete: a lost one's compares).
func TestLockStaleUnlockKeepsNewerLock(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			_, cli := etcd.StartWithClient(t)
			ctx := testCtx(t)
			var opts []lock.Option
			if shared {
				s, err := session.New(ctx, cli, session.WithTTL(5*time.Second))
				require.NoError(t, err)
				t.Cleanup(func() { _ = s.Close() })
				opts = append(opts, lock.WithSession(s))
			}
			m := newMutex(t, cli, "stale", opts...)
			h1, err := m.Lock(ctx)
			require.NoError(t, err)
			_, err = cli.Delete(ctx, h1.Key()) // an operator (or a racing retry) removes it
			require.NoError(t, err)
			recv(t, h1.Lost(), "h1 lost")
			h2, err := m.Lock(ctx)
			require.NoError(t, err)
			require.Equal(t, h1.Key(), h2.Key(), "same session, same name: same key")
			require.Greater(t, h2.Token(), h1.Token())

			err = h1.Unlock(ctx)
			require.ErrorIs(t, err, session.ErrNotHeld)
			require.EqualValues(t, h2.Token(), createRevision(t, cli, h2.Key()), "the stale Unlock deleted the newer lock")
			require.True(t, h2.Alive())
			require.NoError(t, h2.Unlock(ctx))
			require.ErrorIs(t, h2.Unlock(ctx), session.ErrNotHeld)
			require.ErrorIs(t, h2.Err(), session.ErrNotHeld)
			require.ErrorIs(t, context.Cause(h2.Context()), session.ErrNotHeld)
		})
	}
}

func TestLockTryLock(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	a := newMutex(t, cli, "try")
	b := newMutex(t, srv.Client(t), "try")
	ha, err := a.TryLock(ctx)
	require.NoError(t, err)

	_, err = b.TryLock(ctx)
	var le *lock.LockedError
	require.ErrorAs(t, err, &le)
	require.ErrorIs(t, err, lock.ErrLocked)
	require.Equal(t, ha.Key(), le.HolderKey)
	require.Equal(t, ha.Token(), le.HolderToken)
	require.Equal(t, []string{ha.Key()}, keys(t, cli, "try/"), "TryLock must remove its key")

	_, err = a.TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrLocked, "a Mutex is held once at a time")

	require.NoError(t, ha.Unlock(ctx))
	hb, err := b.TryLock(ctx)
	require.NoError(t, err)
	require.NoError(t, hb.Unlock(ctx))
}

func TestLockAcquireTimeoutRemovesWaitingKey(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	a := newMutex(t, cli, "timeout")
	ha, err := a.Lock(ctx)
	require.NoError(t, err)
	b, waiting := waitingMutex(t, srv.Client(t), "timeout")
	// The deadline must end the wait, not the way to it (b's session, its
	// put): on a loaded machine 300ms may not reach the wait, so the
	// deadline doubles until b is seen waiting (OnWait is called before
	// the wait, on Lock's goroutine, so it is in the channel once Lock
	// returns if it was reached).
	for d := 300 * time.Millisecond; ; d *= 2 {
		tctx, cancel := context.WithTimeout(ctx, d)
		_, err = b.Lock(tctx)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		if len(waiting) > 0 {
			break
		}
		require.Less(t, d, 10*time.Second, "b never got to wait")
	}
	recv(t, waiting, "b waited")
	require.Equal(t, []string{ha.Key()}, keys(t, cli, "timeout/"))
	require.NoError(t, ha.Unlock(ctx))
	// b works afterwards.
	hb, err := b.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, hb.Unlock(ctx))
}

func TestLockCloseReleasesAndReportsLoss(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	m, err := lock.New(cli, "close", lock.WithPrefix("ns/"))
	require.NoError(t, err)
	h, err := m.Lock(ctx)
	require.NoError(t, err)
	require.Equal(t, "ns/close/", h.Key()[:len("ns/close/")])
	require.NoError(t, m.Close())
	recv(t, h.Lost(), "loss on Close")
	require.ErrorIs(t, h.Err(), session.ErrClosed)
	require.Empty(t, keys(t, cli, "ns/close/"))
	_, err = m.Lock(ctx)
	require.ErrorIs(t, err, session.ErrClosed)
}

// A Mutex whose own session was lost gets a new session on the next Lock.
func TestLockRelockAfterLossWithOwnSession(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	m := newMutex(t, cli, "relock")
	h1, err := m.Lock(ctx)
	require.NoError(t, err)
	_, err = cli.Revoke(ctx, h1.Lease())
	require.NoError(t, err)
	recv(t, h1.Lost(), "loss")
	h2, err := m.Lock(ctx)
	require.NoError(t, err)
	require.NotEqual(t, h1.Lease(), h2.Lease())
	require.NoError(t, h2.Unlock(ctx))
}

func TestLockNewValidates(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	_, err := lock.New(cli, "")
	require.ErrorIs(t, err, session.ErrInvalidName)
	_, err = lock.New(cli, "x", lock.WithTTL(500*time.Millisecond))
	require.ErrorIs(t, err, session.ErrBadTTL)
	_, err = lock.New(nil, "x")
	require.Error(t, err)
}

// One session shared by many locks: they live and die with it.
func TestLockSharedSession(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	s, err := session.New(ctx, cli, session.WithTTL(5*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	a := newMutex(t, cli, "shared-a", lock.WithSession(s))
	b := newMutex(t, cli, "shared-b", lock.WithSession(s))
	ha, err := a.Lock(ctx)
	require.NoError(t, err)
	hb, err := b.Lock(ctx)
	require.NoError(t, err)
	require.Equal(t, s.Lease(), ha.Lease())
	require.Equal(t, s.Lease(), hb.Lease())
	_, err = cli.Revoke(ctx, s.Lease())
	require.NoError(t, err)
	recv(t, ha.Lost(), "a lost")
	recv(t, hb.Lost(), "b lost")
	_, err = lock.New(cli, "x", lock.WithSession(s), lock.WithTTL(time.Second))
	require.Error(t, err, "WithSession and WithTTL exclude each other")
}

func TestLockCloseWhileWaiting(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	a := newMutex(t, cli, "close-wait")
	ha, err := a.Lock(ctx)
	require.NoError(t, err)
	b, waiting := waitingMutex(t, srv.Client(t), "close-wait")
	got := make(chan error, 1)
	go func() {
		_, err := b.Lock(ctx)
		got <- err
	}()
	recv(t, waiting, "b waiting")
	require.NoError(t, b.Close())
	require.ErrorIs(t, recv(t, got, "b's Lock to end"), session.ErrClosed)
	require.Equal(t, []string{ha.Key()}, keys(t, cli, "close-wait/"))
	require.NoError(t, ha.Unlock(ctx))
}
