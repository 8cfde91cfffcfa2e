package session_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/lease"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/session"
)

// etcd is the member this package's tests share, each under a prefix of
// its own.
var etcd etcdtest.Shared

func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m, &etcd)) }

func TestSessionKeepsLeaseAliveAndCloseRevokes(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := context.Background()
	var renewals int
	renewed := make(chan struct{}, 100)
	s, err := session.New(ctx, cli, session.WithTTL(2*time.Second), session.WithKeepAliveInterval(200*time.Millisecond),
		session.WithObserver(func(ev session.Event) {
			if ev.KeepAliveLatency > 0 {
				renewed <- struct{}{}
			}
		}))
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, s.TTL())
	first := s.Deadline()
	// Outlive the TTL twice over on renewals alone.
	for renewals < 20 {
		select {
		case <-renewed:
			renewals++
		case <-s.Done():
			t.Fatalf("session ended: %v", s.Err())
		case <-time.After(5 * time.Second):
			t.Fatal("no keepalive for 5s")
		}
	}
	require.True(t, s.Alive())
	require.True(t, s.Deadline().After(first))

	require.NoError(t, s.Close())
	<-s.Done()
	require.ErrorIs(t, s.Err(), session.ErrClosed)
	require.False(t, s.Alive())
	ttl, err := cli.TimeToLive(ctx, s.Lease())
	require.NoError(t, err)
	require.EqualValues(t, -1, ttl.TTL, "Close must revoke the lease")
	require.NoError(t, s.Close(), "second Close is a no-op")
}

func TestSessionRevokedBehindItsBack(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := context.Background()
	s, err := session.New(ctx, cli, session.WithTTL(5*time.Second), session.WithKeepAliveInterval(100*time.Millisecond))
	require.NoError(t, err)
	defer s.Orphan()
	_, err = cli.Revoke(ctx, s.Lease())
	require.NoError(t, err)
	select {
	case <-s.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("revocation not noticed")
	}
	require.ErrorIs(t, s.Err(), session.ErrRevoked)
	require.ErrorIs(t, context.Cause(s.Context()), session.ErrRevoked)
}

// With keepalives that never get through, loss is signalled at the local
// deadline, while the server still holds the lease: before anyone else could
// be granted what the session holds.
func TestSessionSignalsLossBeforeServerExpiry(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := context.Background()
	start := time.Now()
	s, err := session.New(ctx, cli, session.WithTTL(2*time.Second), session.WithKeepAliveInterval(time.Hour))
	require.NoError(t, err)
	defer s.Orphan()
	_, err = cli.Put(ctx, "held", "x", clientv3.WithLease(s.Lease()))
	require.NoError(t, err)
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("no loss signalled")
	}
	elapsed := time.Since(start)
	require.ErrorIs(t, s.Err(), session.ErrExpired)
	require.Less(t, elapsed, 2*time.Second, "loss must come before the TTL")
	resp, err := cli.Get(ctx, "held")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "the server must still hold the lease's key when we declare it lost")
}

func TestSessionRejectsBadTTL(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	_, err := session.New(context.Background(), cli, session.WithTTL(500*time.Millisecond))
	require.True(t, errors.Is(err, session.ErrBadTTL), err)
}

func TestSessionAdoptsAnExistingLease(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := context.Background()
	grant, err := cli.Grant(ctx, 3)
	require.NoError(t, err)
	s, err := session.New(ctx, cli, session.WithLease(grant.ID), session.WithTTL(3*time.Second))
	require.NoError(t, err)
	require.Equal(t, grant.ID, s.Lease())
	require.Equal(t, 3*time.Second, s.TTL())
	require.True(t, s.Alive())
	require.NoError(t, s.Close())

	_, err = session.New(ctx, cli, session.WithLease(grant.ID))
	require.Error(t, err, "a revoked lease cannot be adopted")
}

// CheckTTL's bounds: etcd's own maximum (lease.MaxLeaseTTL), one second.
func TestCheckTTLBounds(t *testing.T) {
	require.Equal(t, time.Duration(lease.MaxLeaseTTL)*time.Second, session.MaxTTL)
	require.ErrorIs(t, session.CheckTTL(999*time.Millisecond), session.ErrBadTTL)
	require.NoError(t, session.CheckTTL(time.Second))
	require.NoError(t, session.CheckTTL(session.MaxTTL))
	require.ErrorIs(t, session.CheckTTL(session.MaxTTL+time.Second), session.ErrBadTTL)
}

// The earliest server-side expiry is the local deadline plus the margin,
// the default margin a tenth of the TTL (at least 200ms).
func TestEarliestExpiryIsDeadlinePlusMargin(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	s, err := session.New(context.Background(), cli, session.WithTTL(5*time.Second))
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, session.DefaultMargin(5*time.Second), s.Margin())
	require.Equal(t, 500*time.Millisecond, s.Margin())
	require.Equal(t, 200*time.Millisecond, session.DefaultMargin(time.Second))
	before := s.Deadline()
	e := s.EarliestExpiry()
	after := s.Deadline() // a keepalive may move the deadline meanwhile
	require.False(t, e.Before(before.Add(s.Margin())), "%s before %s", e, before.Add(s.Margin()))
	require.False(t, e.After(after.Add(s.Margin())), "%s after %s", e, after.Add(s.Margin()))
}
