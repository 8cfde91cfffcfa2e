package etcdtest

import (
	"context"
	"testing"
	"time"

	"github.com/coordkit/coordkit/fencing"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Held is what CheckLockDelay needs of a held lock or slot (lock.Held and
// semaphore.Held have it, from session.HeldKey).
type Held interface {
	Lease() clientv3.LeaseID
	Lost() <-chan struct{}
	Release(context.Context) error
}

// DelayPair is a holder and a waiter of one name: Hold takes it now, Wait
// waits for it on a handle that has the lock delay, and Waiting returns
// once Wait is waiting.
type DelayPair struct {
	Hold, Wait func(context.Context) (Held, error)
	Waiting    func()
}

// CheckLockDelay checks a lock delay d (lock.WithLockDelay,
// semaphore.WithLockDelay) on the pairs mk makes for a name and a delay:
// after the holder is lost (its lease revoked) the waiter is granted no
// earlier than d after the revoke and the holder learns of its loss; after
// a clean release it is granted at once (the delay is then an hour, longer
// than the test's whole context). Only lower bounds are asserted.
func CheckLockDelay(t *testing.T, cli *clientv3.Client, d time.Duration, mk func(t *testing.T, name string, delay time.Duration) DelayPair) {
	t.Helper()
	type grant struct {
		h   Held
		err error
		at  time.Time
	}
	waitAsync := func(ctx context.Context, p DelayPair) <-chan grant {
		ch := make(chan grant, 1)
		go func() {
			h, err := p.Wait(ctx)
			ch <- grant{h, err, time.Now()}
		}()
		return ch
	}
	t.Run("lost", func(t *testing.T) {
		ctx := Ctx(t, 20*time.Second)
		p := mk(t, "delay-lost", d)
		h, err := p.Hold(ctx)
		require.NoError(t, err)
		got := waitAsync(ctx, p)
		p.Waiting()
		revokedAt := time.Now()
		_, err = cli.Revoke(ctx, h.Lease())
		require.NoError(t, err)
		r := Recv(t, got, "next holder", 15*time.Second)
		require.NoError(t, r.err)
		require.GreaterOrEqual(t, r.at.Sub(revokedAt), d, "granted before the lock delay passed")
		Recv(t, h.Lost(), "holder's loss", 15*time.Second)
		require.NoError(t, r.h.Release(ctx))
	})
	t.Run("released", func(t *testing.T) {
		ctx := Ctx(t, 20*time.Second)
		p := mk(t, "delay-released", time.Hour)
		h, err := p.Hold(ctx)
		require.NoError(t, err)
		got := waitAsync(ctx, p)
		p.Waiting()
		require.NoError(t, h.Release(ctx))
		r := Recv(t, got, "next holder", 15*time.Second)
		require.NoError(t, r.err, "a clean release must not cost the lock delay")
		require.NoError(t, r.h.Release(ctx))
	})
}

// Token is what RequireTokenOf needs of a held key.
type Token interface {
	Key() string
	Token() fencing.Token
}

// RequireTokenOf asserts the fencing contract of a held key: its token is
// its key's create revision (not a later revision at which the holder
// learnt of its grant), and, given a previous holder of the same lock or
// slot, greater than that holder's.
func RequireTokenOf(t *testing.T, cli *clientv3.Client, h Token, previous Token) {
	t.Helper()
	resp, err := cli.Get(context.Background(), h.Key())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "the holder's key %s", h.Key())
	require.EqualValues(t, resp.Kvs[0].CreateRevision, h.Token(), "the token is the key's create revision")
	if previous != nil {
		require.Greater(t, h.Token(), previous.Token(), "tokens grow from holder to holder")
	}
}
