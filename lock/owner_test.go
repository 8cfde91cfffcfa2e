package lock_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/session"
)

// A transaction guarded by IsOwner commits while the lock is held and not
// after the holder's lease is revoked, even when a new holder has the lock.
func TestHeldIsOwnerGuardsTxn(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)

	a := newMutex(t, srv.Client(t), "owner")
	ha, err := a.Lock(ctx)
	require.NoError(t, err)

	resp, err := cli.Txn(ctx).If(ha.IsOwner()).Then(clientv3.OpPut("data", "a1")).Commit()
	require.NoError(t, err)
	require.True(t, resp.Succeeded)
	_, err = ha.Txn(ctx, clientv3.OpPut("data", "a2"))
	require.NoError(t, err)

	_, err = cli.Revoke(ctx, ha.Lease())
	require.NoError(t, err)
	// A successor takes the lock: the old holder's key name may come back
	// (not here: another session), but never with the old create revision.
	b := newMutex(t, srv.Client(t), "owner")
	hb, err := b.Lock(ctx)
	require.NoError(t, err)
	require.Greater(t, hb.Token(), ha.Token())

	resp, err = cli.Txn(ctx).If(ha.IsOwner()).Then(clientv3.OpPut("data", "a3")).Commit()
	require.NoError(t, err)
	require.False(t, resp.Succeeded)
	resp, err = ha.Txn(ctx, clientv3.OpPut("data", "a4"))
	require.ErrorIs(t, err, session.ErrNotOwner)
	require.NotNil(t, resp)
	require.False(t, resp.Succeeded)

	_, err = hb.Txn(ctx, clientv3.OpPut("data", "b1"))
	require.NoError(t, err)
	got, err := cli.Get(ctx, "data")
	require.NoError(t, err)
	require.Equal(t, "b1", string(got.Kvs[0].Value))
	require.Equal(t, int64(3), got.Kvs[0].Version, "a1, a2, b1: the stale puts were never applied")
}

// The same session locking again gets the same key with a new create
// revision: the first acquisition's guard must not pass for the second.
func TestHeldIsOwnerAfterRelock(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	m := newMutex(t, cli, "relock")
	h1, err := m.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, h1.Unlock(ctx))
	h2, err := m.Lock(ctx)
	require.NoError(t, err)
	require.Equal(t, h1.Key(), h2.Key())

	_, err = h1.Txn(ctx, clientv3.OpPut("data", "old"))
	require.ErrorIs(t, err, session.ErrNotOwner)
	_, err = h2.Txn(ctx, clientv3.OpPut("data", "new"))
	require.NoError(t, err)
}
