package primitive_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/session"
)

var etcd etcdtest.Shared

func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m, &etcd)) }

// A holder whose client is closed without revoking its lease (a crash):
// a waiter's WatchExpiry revokes the lease within 100ms of its expiry at
// the server, which is at most the TTL after the holder's last keepalive
// and so at most the TTL after the close. etcd's own expiry (its lessor's
// 500 ms tick) can come first, the waiter then has nothing to revoke: that
// crash is repeated, up to three, and the waiter must revoke in one
// (make test once saw etcd's tick win; the lock, semaphore and election
// crash tests count the same way).
func TestWatchExpiryRevokesACrashedHoldersLease(t *testing.T) {
	t.Parallel()
	ns, cli := etcd.StartWithClient(t)
	for try := 1; try <= 3; try++ {
		if crashAndWatchExpiry(t, ns, cli, fmt.Sprintf("crash/k%d", try)) {
			return
		}
		t.Logf("try %d: etcd expired the lease before the waiter could prove it had", try)
	}
	t.Fatal("in three crashes the waiter never revoked the crashed holder's lease")
}

// crashAndWatchExpiry crashes a holder of key with a waiter watching its
// lease, and reports whether the waiter revoked it (within the TTL + 100
// ms of the crash); either way the key is gone with the lease.
func crashAndWatchExpiry(t *testing.T, ns *etcdtest.NS, cli *clientv3.Client, key string) bool {
	t.Helper()
	holder := ns.Client(t)
	s, err := session.New(etcdtest.Ctx(t, 10*time.Second), holder, session.WithTTL(2*time.Second))
	require.NoError(t, err)
	put, err := holder.Put(context.Background(), key, "v", clientv3.WithLease(s.Lease()))
	require.NoError(t, err)
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	deleted := cli.Watch(wctx, key, clientv3.WithRev(put.Header.Revision+1), clientv3.WithFilterPut())

	revoked := make(chan time.Time, 1)
	stop := primitive.WatchExpiry(context.Background(), cli, session.RealClock{}, []primitive.ExpiryTarget{{Key: key, Lease: int64(s.Lease())}},
		primitive.ExpiryConfig{OnRevoke: func(primitive.ExpiryTarget) { revoked <- time.Now() }})
	defer stop()
	crashed := time.Now()
	require.NoError(t, holder.Close()) // keepalives stop; the lease is not revoked
	wr := etcdtest.Recv(t, deleted, "the crashed holder's key going with its lease", 10*time.Second)
	require.NoError(t, wr.Err())
	require.Len(t, wr.Events, 1)
	// No event says that etcd's tick, not the waiter, revoked: a waiter's
	// OnRevoke follows its Revoke's answer, which follows the delete, so a
	// callback not there 2 s after the delete is not coming.
	select {
	case at := <-revoked:
		t.Logf("revoked %s after the crash", at.Sub(crashed))
		require.LessOrEqual(t, at.Sub(crashed), 2*time.Second+100*time.Millisecond, "revoked %s after the crash", at.Sub(crashed))
	case <-time.After(2 * time.Second):
		return false
	}
	resp, err := cli.Get(context.Background(), key)
	require.NoError(t, err)
	require.Empty(t, resp.Kvs, "the key went with the lease")
	return true
}

// A holder whose keepalives go on is never revoked by a waiter, however
// closely it polls: for 3 TTLs a waiter reading every millisecond, and the
// holder's session and key stay.
func TestWatchExpiryLeavesALiveLease(t *testing.T) {
	t.Parallel()
	ns, cli := etcd.StartWithClient(t)
	holder := ns.Client(t)
	s, err := session.New(etcdtest.Ctx(t, 10*time.Second), holder, session.WithTTL(2*time.Second))
	require.NoError(t, err)
	defer func() { _ = s.Close() }()
	_, err = holder.Put(context.Background(), "live/k", "v", clientv3.WithLease(s.Lease()))
	require.NoError(t, err)

	revoked := make(chan primitive.ExpiryTarget, 1)
	stop := primitive.WatchExpiry(context.Background(), cli, session.RealClock{}, []primitive.ExpiryTarget{{Key: "live/k", Lease: int64(s.Lease())}},
		primitive.ExpiryConfig{Poll: time.Millisecond, OnRevoke: func(t primitive.ExpiryTarget) { revoked <- t }})
	defer stop()
	select {
	case <-revoked:
		t.Fatal("a live holder's lease was revoked")
	case <-s.Done():
		t.Fatalf("the holder's session ended: %v", s.Err())
	case <-time.After(6 * time.Second):
	}
	stop()
	resp, err := cli.Get(context.Background(), "live/k")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
}
