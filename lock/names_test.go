package lock_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/semaphore"
	"github.com/coordkit/coordkit/session"
)

// A lock named nest/child keeps its keys below nest/: they are another
// name's, and neither hold nor block the lock nest — not as its holder, not
// as the predecessor of one of its waiters — nor show in its status.
func TestLockNestedNamesDoNotAlias(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)

	child := newMutex(t, srv.Client(t), "nest/child")
	hc, err := child.Lock(ctx)
	require.NoError(t, err)
	a := newMutex(t, srv.Client(t), "nest")
	ha, err := a.TryLock(ctx)
	require.NoError(t, err, "a holder of nest/child must not block nest")

	// A waiter whose predecessor by create revision is the nested key.
	child2 := newMutex(t, srv.Client(t), "nest/child2")
	hc2, err := child2.Lock(ctx)
	require.NoError(t, err)
	b, waiting := waitingMutex(t, srv.Client(t), "nest")
	got := make(chan *lock.Held, 1)
	go func() {
		h, err := b.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- h
	}()
	w := recv(t, waiting, "b waiting")
	require.Equal(t, ha.Key(), w.HolderKey, "b waits for a, not for a nested key")

	st, err := primitive.ReadLock(ctx, cli, primitive.Config{Kind: primitive.KindLock, Name: "nest"})
	require.NoError(t, err)
	require.Len(t, st.Holders, 1)
	require.Equal(t, ha.Key(), st.Holders[0].Key)
	require.Len(t, st.Waiters, 1)

	require.NoError(t, ha.Unlock(ctx))
	hb := recv(t, got, "b's lock")
	require.Greater(t, hb.Token(), ha.Token())
	require.NoError(t, hb.Unlock(ctx))
	require.NoError(t, hc.Unlock(ctx))
	require.NoError(t, hc2.Unlock(ctx))
}

// A semaphore's name is not a lock's: the lock refuses it at once, naming
// the key that shows it, instead of waiting for ever behind the lease-less
// limit key; and the reverse.
func TestLockAndSemaphoreNamesExcludeEachOther(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)

	s, err := semaphore.New(srv.Client(t), "mixed", 2)
	require.NoError(t, err)
	defer s.Close()
	h, err := s.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, h.Release(ctx)) // the limit key stays

	m := newMutex(t, srv.Client(t), "mixed")
	_, err = m.Lock(ctx)
	require.ErrorIs(t, err, session.ErrNameInUse)
	require.ErrorContains(t, err, "mixed/limit")
	_, err = primitive.ReadLock(ctx, cli, primitive.Config{Kind: primitive.KindLock, Name: "mixed"})
	require.ErrorIs(t, err, session.ErrNameInUse)
	require.Empty(t, keys(t, cli, "mixed/slots/"))

	l := newMutex(t, srv.Client(t), "plain")
	hl, err := l.Lock(ctx)
	require.NoError(t, err)
	s2, err := semaphore.New(srv.Client(t), "plain", 3)
	require.NoError(t, err)
	defer s2.Close()
	_, err = s2.Acquire(ctx)
	require.ErrorIs(t, err, session.ErrNameInUse)
	require.ErrorContains(t, err, hl.Key())
	require.Equal(t, []string{hl.Key()}, keys(t, cli, "plain/"), "the semaphore left nothing under the lock's name (no limit key)")
	_, err = primitive.ReadSemaphore(ctx, cli, primitive.Config{Kind: primitive.KindSemaphore, Name: "plain"})
	require.ErrorIs(t, err, session.ErrNameInUse)
	require.NoError(t, hl.Unlock(ctx))
}

// Names whose keys would be another name's layout are refused.
func TestLockReservedNames(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	for _, name := range []string{"nest2/read", "nest2/write", "pool/limit", "pool/queue", "pool/slots"} {
		_, err := lock.New(cli, name)
		require.ErrorIs(t, err, session.ErrInvalidName, name)
		_, err = lock.NewRWMutex(cli, name)
		require.ErrorIs(t, err, session.ErrInvalidName, name)
		_, err = semaphore.New(cli, name, 2)
		require.ErrorIs(t, err, session.ErrInvalidName, name)
	}
	// The same keys spelled with a prefix.
	_, err := lock.New(cli, "slots", lock.WithPrefix("pool/"))
	require.ErrorIs(t, err, session.ErrInvalidName)
	_, err = semaphore.New(cli, "read", 2, semaphore.WithPrefix("nest2/"))
	require.ErrorIs(t, err, session.ErrInvalidName)
}
