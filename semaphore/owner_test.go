package semaphore_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/session"
)

// A transaction guarded by a slot's IsOwner commits while the slot is held
// and never after it is lost, even once a successor holds the same slot.
func TestSemHeldIsOwnerGuardsTxn(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)

	a := newSem(t, srv.Client(t), "owner", 1)
	ha, err := a.Acquire(ctx)
	require.NoError(t, err)
	_, err = ha.Txn(ctx, clientv3.OpPut("data", "a1"))
	require.NoError(t, err)

	_, err = cli.Revoke(ctx, ha.Lease())
	require.NoError(t, err)
	<-ha.Lost()
	b := newSem(t, srv.Client(t), "owner", 1)
	hb, err := b.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, ha.Slot(), hb.Slot())
	require.Greater(t, hb.Token(), ha.Token())

	resp, err := cli.Txn(ctx).If(ha.IsOwner()).Then(clientv3.OpPut("data", "a2")).Commit()
	require.NoError(t, err)
	require.False(t, resp.Succeeded, "the lost slot's guard must fail")
	resp, err = ha.Txn(ctx, clientv3.OpPut("data", "a3"))
	require.ErrorIs(t, err, session.ErrNotOwner)
	require.False(t, resp.Succeeded)

	_, err = hb.Txn(ctx, clientv3.OpPut("data", "b1"))
	require.NoError(t, err)
	got, err := cli.Get(ctx, "data")
	require.NoError(t, err)
	require.Equal(t, "b1", string(got.Kvs[0].Value))
	require.Equal(t, int64(2), got.Kvs[0].Version, "a1, b1: the stale puts were never applied")
	require.NoError(t, hb.Release(ctx))
}
