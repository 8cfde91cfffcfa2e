package lock_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/session"
)

// kvRequests records the KV requests a client sends and their answers.
type kvRequests struct {
	mu    sync.Mutex
	calls []kvCall
}

type kvCall struct {
	method string // "Txn", "DeleteRange", ...
	reply  any
}

func (r *kvRequests) interceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if name, ok := strings.CutPrefix(method, "/etcdserverpb.KV/"); ok && err == nil {
		r.mu.Lock()
		r.calls = append(r.calls, kvCall{method: name, reply: reply})
		r.mu.Unlock()
	}
	return err
}

// take returns the requests sent since the last take.
func (r *kvRequests) take() []kvCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

// writes are the calls other than reads: a hold that outlasts
// primitive.LossWatchDelay (a loaded machine) starts its loss watch, whose
// read lands among them.
func writes(calls []kvCall) []kvCall {
	var out []kvCall
	for _, c := range calls {
		if c.method != "Range" {
			out = append(out, c)
		}
	}
	return out
}

func methods(calls []kvCall) []string {
	var out []string
	for _, c := range writes(calls) {
		out = append(out, c.method)
	}
	return out
}

// An uncontended lock+unlock of a Mutex with sessions of its own sends a
// Txn that applies the put alone (nothing under the name: nothing read
// back) and a plain delete, as concurrency.Mutex does; a Mutex on a shared
// session releases with a compare-and-delete (another handle on its lease
// could have made a newer key of the name); a lock that is held answers
// from the Txn's other branch.
func TestLockRequestsUncontended(t *testing.T) {
	t.Parallel()
	ns, _ := etcd.StartWithClient(t)
	var reqs kvRequests
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: ns.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(reqs.interceptor)},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	ctx := testCtx(t)
	pfx := lock.WithPrefix(ns.Prefix())

	own := newMutex(t, cli, "req", pfx)
	for range 3 {
		reqs.take()
		h, err := own.Lock(ctx)
		require.NoError(t, err)
		calls := writes(reqs.take())
		require.Equal(t, []string{"Txn"}, methods(calls))
		txn := calls[0].reply.(*pb.TxnResponse)
		require.True(t, txn.Succeeded, "nothing under the name: the put alone")
		require.Len(t, txn.Responses, 1)
		require.NotNil(t, txn.Responses[0].GetResponsePut())
		require.EqualValues(t, txn.Header.Revision, h.Token())
		require.NoError(t, h.Unlock(ctx))
		require.Equal(t, []string{"DeleteRange"}, methods(reqs.take()))
		require.Empty(t, keys(t, cli, ns.Prefix()+"req/"))
	}

	// Held: a second Mutex's try is answered by the other branch, which
	// put its key and read the holder's; it removes its key.
	h, err := own.Lock(ctx)
	require.NoError(t, err)
	other := newMutex(t, cli, "req", pfx)
	reqs.take()
	_, err = other.TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrLocked)
	calls := writes(reqs.take())
	require.Equal(t, "Txn", calls[0].method)
	require.False(t, calls[0].reply.(*pb.TxnResponse).Succeeded)
	require.Equal(t, []string{h.Key()}, keys(t, cli, ns.Prefix()+"req/"))
	require.NoError(t, h.Unlock(ctx))

	s, err := session.New(ctx, cli, session.WithTTL(5*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	shared := newMutex(t, cli, "req", pfx, lock.WithSession(s))
	h, err = shared.Lock(ctx)
	require.NoError(t, err)
	reqs.take()
	require.NoError(t, h.Unlock(ctx))
	require.Equal(t, []string{"Txn"}, methods(reqs.take()), "on a shared session: a compare-and-delete")
}
