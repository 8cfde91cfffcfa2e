package lock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/session"
)

// An uncontended lock+unlock of a Mutex with sessions of its own sends a
// Txn that applies the put alone (nothing under the name: nothing read
// back) and a plain delete, as concurrency.Mutex does; a Mutex on a shared
// session releases with a compare-and-delete (another handle on its lease
// could have made a newer key of the name); a lock that is held answers
// from the Txn's other branch.
func TestLockRequestsUncontended(t *testing.T) {
	t.Parallel()
	ns, _ := etcd.StartWithClient(t)
	var reqs etcdtest.KVWrites
	cli := etcdtest.Dial(t, ns.Endpoints(), reqs.DialOption())
	ctx := testCtx(t)
	pfx := lock.WithPrefix(ns.Prefix())

	own := newMutex(t, cli, "req", pfx)
	for range 3 {
		reqs.Take()
		h, err := own.Lock(ctx)
		require.NoError(t, err)
		calls := reqs.Take()
		require.Equal(t, []string{"Txn"}, etcdtest.Methods(calls))
		txn := calls[0].Reply.(*pb.TxnResponse)
		require.True(t, txn.Succeeded, "nothing under the name: the put alone")
		require.Len(t, txn.Responses, 1)
		require.NotNil(t, txn.Responses[0].GetResponsePut())
		require.EqualValues(t, txn.Header.Revision, h.Token())
		require.NoError(t, h.Unlock(ctx))
		require.Equal(t, []string{"DeleteRange"}, etcdtest.Methods(reqs.Take()))
		require.Empty(t, keys(t, cli, ns.Prefix()+"req/"))
	}

	// Held: a second Mutex's try is answered by the other branch, which
	// put its key and read the holder's; it removes its key.
	h, err := own.Lock(ctx)
	require.NoError(t, err)
	other := newMutex(t, cli, "req", pfx)
	reqs.Take()
	_, err = other.TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrLocked)
	calls := reqs.Take()
	require.Equal(t, "Txn", calls[0].Method)
	require.False(t, calls[0].Reply.(*pb.TxnResponse).Succeeded)
	require.Equal(t, []string{h.Key()}, keys(t, cli, ns.Prefix()+"req/"))
	require.NoError(t, h.Unlock(ctx))

	s, err := session.New(ctx, cli, session.WithTTL(5*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	shared := newMutex(t, cli, "req", pfx, lock.WithSession(s))
	h, err = shared.Lock(ctx)
	require.NoError(t, err)
	reqs.Take()
	require.NoError(t, h.Unlock(ctx))
	require.Equal(t, []string{"Txn"}, etcdtest.Methods(reqs.Take()), "on a shared session: a compare-and-delete")
}
