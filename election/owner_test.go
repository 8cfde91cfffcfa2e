package election_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/election"
)

// A transaction guarded by IsOwner commits while we lead and not after the
// leader's lease is revoked and another campaigner has won.
func TestLeadershipIsOwnerGuardsTxn(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)

	e1 := newElection(t, cli, "owner")
	l1, err := e1.Campaign(ctx, "a")
	require.NoError(t, err)
	resp, err := cli.Txn(ctx).If(l1.IsOwner()).Then(clientv3.OpPut("data", "a1")).Commit()
	require.NoError(t, err)
	require.True(t, resp.Succeeded)
	_, err = l1.Txn(ctx, clientv3.OpPut("data", "a2"))
	require.NoError(t, err)

	_, err = cli.Revoke(ctx, l1.Lease())
	require.NoError(t, err)
	e2 := newElection(t, cli, "owner")
	l2, err := e2.Campaign(ctx, "b")
	require.NoError(t, err)
	require.Greater(t, l2.Token(), l1.Token())

	resp, err = cli.Txn(ctx).If(l1.IsOwner()).Then(clientv3.OpPut("data", "a3")).Commit()
	require.NoError(t, err)
	require.False(t, resp.Succeeded)
	resp, err = l1.Txn(ctx, clientv3.OpPut("data", "a4"))
	require.ErrorIs(t, err, election.ErrNotLeader)
	require.NotNil(t, resp)
	require.False(t, resp.Succeeded)

	_, err = l2.Txn(ctx, clientv3.OpPut("data", "b1"))
	require.NoError(t, err)
	got, err := cli.Get(ctx, "data")
	require.NoError(t, err)
	require.Equal(t, "b1", string(got.Kvs[0].Value))
	require.Equal(t, int64(3), got.Kvs[0].Version, "a1, a2, b1: the stale puts were never applied")
}
