package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/session"
)

// After a holder is lost (lease revoked), the next holder waits the lock
// delay; after a clean release it does not (etcdtest.CheckLockDelay, which
// semaphore's TestSemaphoreLockDelay runs too), for a mutex and both
// orders of a read-write lock.
func TestLockDelay(t *testing.T) {
	t.Parallel()
	const d = 700 * time.Millisecond
	srv, cli := etcd.StartWithClient(t)
	type lockFn func(context.Context) (*lock.Held, error)
	held := func(fn lockFn) func(context.Context) (etcdtest.Held, error) {
		return func(ctx context.Context) (etcdtest.Held, error) {
			h, err := fn(ctx)
			if err != nil {
				return nil, err
			}
			return h, nil
		}
	}
	pair := func(t *testing.T, hold, wait lockFn, waiting <-chan lock.Waiting) etcdtest.DelayPair {
		return etcdtest.DelayPair{Hold: held(hold), Wait: held(wait), Waiting: func() { recv(t, waiting, "waiter") }}
	}
	kinds := []struct {
		name string
		make func(t *testing.T, name string, delay time.Duration) etcdtest.DelayPair
	}{
		{"mutex", func(t *testing.T, name string, delay time.Duration) etcdtest.DelayPair {
			a := newMutex(t, srv.Client(t), name)
			b, w := waitingMutex(t, srv.Client(t), name, lock.WithLockDelay(delay))
			return pair(t, a.Lock, b.Lock, w)
		}},
		{"rwmutex writer after reader", func(t *testing.T, name string, delay time.Duration) etcdtest.DelayPair {
			a := newRW(t, srv.Client(t), name)
			b, w := waitingRW(t, srv.Client(t), name, lock.WithLockDelay(delay))
			return pair(t, a.RLock, b.Lock, w)
		}},
		{"rwmutex reader after writer", func(t *testing.T, name string, delay time.Duration) etcdtest.DelayPair {
			a := newRW(t, srv.Client(t), name)
			b, w := waitingRW(t, srv.Client(t), name, lock.WithLockDelay(delay))
			return pair(t, a.Lock, b.RLock, w)
		}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { etcdtest.CheckLockDelay(t, cli, d, k.make) })
	}
}

// Readers R1 and R2 hold; a writer waits, watching only R2. R1's lease is
// revoked, then R2 releases cleanly: the writer must still wait the delay
// for R1's loss, which it did not watch.
func TestLockDelayUnwatchedLoss(t *testing.T) {
	t.Parallel()
	const d = 700 * time.Millisecond
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	r1 := newRW(t, srv.Client(t), "unwatched")
	r2 := newRW(t, srv.Client(t), "unwatched")
	w, waiting := waitingRW(t, srv.Client(t), "unwatched", lock.WithLockDelay(d))
	h1, err := r1.RLock(ctx)
	require.NoError(t, err)
	h2, err := r2.RLock(ctx)
	require.NoError(t, err)
	got := acquireAsync(ctx, w.Lock)
	recv(t, waiting, "writer waiting")
	revokedAt := time.Now()
	_, err = cli.Revoke(ctx, h1.Lease())
	require.NoError(t, err)
	recv(t, h1.Lost(), "r1 lost")
	require.NoError(t, h2.Unlock(ctx))
	r := recv(t, got, "writer")
	require.NoError(t, r.err)
	require.GreaterOrEqual(t, r.at.Sub(revokedAt), d)
	require.NoError(t, r.h.Unlock(ctx))
}

func TestLockDelayRejectsNegative(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	_, err := lock.New(cli, "x", lock.WithLockDelay(-time.Second))
	require.Error(t, err)
}

// Status reads holders and waiters of a lock taken by concurrency.Mutex and
// of an RWMutex.
func TestLockStatus(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)

	st, err := primitive.ReadLock(ctx, cli, primitive.Config{Kind: primitive.KindLock, Name: "nobody"})
	require.NoError(t, err)
	require.False(t, st.Held())
	require.Empty(t, st.Waiters)

	es, err := concurrency.NewSession(srv.Client(t), concurrency.WithTTL(30))
	require.NoError(t, err)
	t.Cleanup(func() { _ = es.Close() })
	em := concurrency.NewMutex(es, "st")
	require.NoError(t, em.Lock(ctx))
	m, waiting := waitingMutex(t, srv.Client(t), "st")
	got := acquireAsync(ctx, m.Lock)
	w := recv(t, waiting, "waiter")

	st, err = primitive.ReadLock(ctx, cli, primitive.Config{Kind: primitive.KindLock, Name: "st"})
	require.NoError(t, err)
	require.Len(t, st.Holders, 1)
	hd := st.Holders[0]
	require.Equal(t, em.Key(), hd.Key)
	require.EqualValues(t, em.Header().Revision, hd.Token)
	require.Equal(t, es.Lease(), hd.Lease)
	require.False(t, hd.Shared)
	require.Greater(t, hd.TTL, time.Duration(0))
	require.LessOrEqual(t, hd.TTL, 30*time.Second)
	require.Len(t, st.Waiters, 1)
	require.Equal(t, w.Key, st.Waiters[0].Key)
	require.NoError(t, em.Unlock(ctx))
	r := recv(t, got, "coordkit lock")
	require.NoError(t, r.err)
	require.NoError(t, r.h.Unlock(ctx))

	// Two readers hold, a writer and a reader wait behind them.
	r1 := newRW(t, srv.Client(t), "st-rw")
	r2 := newRW(t, srv.Client(t), "st-rw")
	wr, wWaiting := waitingRW(t, srv.Client(t), "st-rw")
	r3, r3Waiting := waitingRW(t, srv.Client(t), "st-rw")
	h1, err := r1.RLock(ctx)
	require.NoError(t, err)
	h2, err := r2.RLock(ctx)
	require.NoError(t, err)
	gw := acquireAsync(ctx, wr.Lock)
	recv(t, wWaiting, "writer waiting")
	g3 := acquireAsync(ctx, r3.RLock)
	recv(t, r3Waiting, "reader waiting")
	st, err = primitive.ReadLock(ctx, cli, primitive.Config{Kind: primitive.KindLock, Name: "st-rw"})
	require.NoError(t, err)
	require.Equal(t, []string{h1.Key(), h2.Key()}, entryKeys(st.Holders))
	require.True(t, st.Holders[0].Shared)
	require.Equal(t, h1.Token(), st.Holders[0].Token)
	require.Len(t, st.Waiters, 2)
	require.False(t, st.Waiters[0].Shared)
	require.True(t, st.Waiters[1].Shared)
	require.NoError(t, h1.Unlock(ctx))
	require.NoError(t, h2.Unlock(ctx))
	rw := recv(t, gw, "writer")
	require.NoError(t, rw.err)
	require.NoError(t, rw.h.Unlock(ctx))
	rr := recv(t, g3, "reader")
	require.NoError(t, rr.err)
	require.NoError(t, rr.h.Unlock(ctx))
	_ = clientv3.NoLease
}

func entryKeys(es []primitive.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Key)
	}
	return out
}

// A holder whose process stops keeping its lease alive (as after SIGKILL):
// the lease expires on the server, which the waiter reads as a loss, so it
// waits the delay after the expiry, which is after the holder went silent.
func TestLockDelayAfterExpiry(t *testing.T) {
	t.Parallel()
	const d = 500 * time.Millisecond
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	s, err := session.New(ctx, srv.Client(t), session.WithTTL(2*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	a := newMutex(t, srv.Client(t), "expiry", lock.WithSession(s))
	b, waiting := waitingMutex(t, srv.Client(t), "expiry", lock.WithLockDelay(d))
	ha, err := a.Lock(ctx)
	require.NoError(t, err)
	got := acquireAsync(ctx, b.Lock)
	recv(t, waiting, "b waiting")
	silentAt := time.Now()
	s.Orphan()
	r := recv(t, got, "b")
	require.NoError(t, r.err)
	ttl, err := cli.TimeToLive(ctx, ha.Lease())
	require.NoError(t, err)
	require.EqualValues(t, -1, ttl.TTL, "the holder's lease expired")
	require.GreaterOrEqual(t, r.at.Sub(silentAt), d)
	require.NoError(t, r.h.Unlock(ctx))
}
