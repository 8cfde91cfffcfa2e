package semaphore_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/semaphore"
	"github.com/coordkit/coordkit/session"
)

// A limit chosen by mistake is not fixed for ever: SetLimit changes it, and
// Delete frees the name — refused while held, unless forced.
func TestSemDeleteAndSetLimit(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)

	typo := newSem(t, srv.Client(t), "typo", 99999999)
	h, err := typo.Acquire(ctx)
	require.NoError(t, err)

	_, err = semaphore.Delete(ctx, cli, "typo", false)
	require.ErrorIs(t, err, semaphore.ErrInUse)
	require.ErrorContains(t, err, "1 slots held and 0 waiters")
	require.NoError(t, h.Release(ctx))

	deleted, err := semaphore.Delete(ctx, cli, "typo", false)
	require.NoError(t, err)
	require.True(t, deleted)
	resp, err := cli.Get(ctx, "typo/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Empty(t, resp.Kvs)
	deleted, err = semaphore.Delete(ctx, cli, "typo", false)
	require.NoError(t, err)
	require.False(t, deleted, "nothing left to delete")

	two := newSem(t, srv.Client(t), "typo", 2)
	h2, err := two.Acquire(ctx)
	require.NoError(t, err, "the name is free for another limit")

	// SetLimit while held: the next Acquire with the old limit is refused.
	require.NoError(t, semaphore.SetLimit(ctx, cli, "typo", 3))
	other := newSem(t, srv.Client(t), "typo", 2)
	_, err = other.Acquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrLimitMismatch)

	// Forced: the holder loses its slot at once.
	deleted, err = semaphore.Delete(ctx, cli, "typo", true)
	require.NoError(t, err)
	require.True(t, deleted)
	<-h2.Lost()
	require.ErrorIs(t, h2.Err(), session.ErrLost)
}
