package primitive_test

import (
	"context"
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
// and so at most the TTL after the close.
func TestWatchExpiryRevokesACrashedHoldersLease(t *testing.T) {
	t.Parallel()
	ns, cli := etcd.StartWithClient(t)
	holder := ns.Client(t)
	s, err := session.New(etcdtest.Ctx(t, 10*time.Second), holder, session.WithTTL(2*time.Second))
	require.NoError(t, err)
	_, err = holder.Put(context.Background(), "crash/k", "v", clientv3.WithLease(s.Lease()))
	require.NoError(t, err)

	revoked := make(chan time.Time, 1)
	stop := primitive.WatchExpiry(context.Background(), cli, session.RealClock{}, []primitive.ExpiryTarget{{Key: "crash/k", Lease: int64(s.Lease())}},
		primitive.ExpiryConfig{OnRevoke: func(primitive.ExpiryTarget) { revoked <- time.Now() }})
	defer stop()
	crashed := time.Now()
	require.NoError(t, holder.Close()) // keepalives stop; the lease is not revoked
	at := etcdtest.Recv(t, revoked, "the waiter's revocation", 10*time.Second)
	t.Logf("revoked %s after the crash", at.Sub(crashed))
	require.LessOrEqual(t, at.Sub(crashed), 2*time.Second+100*time.Millisecond, "revoked %s after the crash", at.Sub(crashed))
	resp, err := cli.Get(context.Background(), "crash/k")
	require.NoError(t, err)
	require.Empty(t, resp.Kvs, "the key went with the lease")
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
