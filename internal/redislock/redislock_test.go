package redislock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/nettest"
	"github.com/coordkit/coordkit/internal/redislock"
	"github.com/coordkit/coordkit/internal/redislock/redistest"
)

func TestDialUnreachableNamesTheAddress(t *testing.T) {
	addr := nettest.ClosedAddr(t)
	_, err := redislock.Dial(context.Background(), addr, time.Second)
	require.ErrorIs(t, err, redislock.ErrUnreachable)
	require.Contains(t, err.Error(), addr)
	require.Contains(t, err.Error(), "connection refused")
	require.NotContains(t, err.Error(), "did not answer", "it answered at once: nothing listens there")

	_, err = redislock.Dial(context.Background(), "", 0)
	require.ErrorIs(t, err, redislock.ErrInvalid)
}

// A server that accepts the connection and never answers the PING did not
// answer within the timeout.
func TestDialSilentServerDidNotAnswer(t *testing.T) {
	silent := nettest.Silent(t)
	start := time.Now()
	_, err := redislock.Dial(context.Background(), silent, 500*time.Millisecond)
	took := time.Since(start)
	require.ErrorIs(t, err, redislock.ErrUnreachable)
	// Not go-redis's own read timeout (3s, twice: 5s before the fix).
	require.Less(t, took, 3*time.Second, "Dial waited past its timeout")
	require.Contains(t, err.Error(), silent+" did not answer within 500ms")
}

func TestInvalidArguments(t *testing.T) {
	for _, what := range []string{"", "Upper", "has space", "glob*", "-dash"} {
		_, err := redislock.NewKeyspace(what)
		require.ErrorIs(t, err, redislock.ErrInvalid, what)
	}
	ks, err := redislock.NewKeyspace("unit")
	require.NoError(t, err)
	other, err := redislock.NewKeyspace("unit")
	require.NoError(t, err)
	require.NotEqual(t, ks.Prefix(), other.Prefix(), "each run has its own prefix")
	require.True(t, strings.HasPrefix(ks.Key("x"), "coordkit:unit:"))
	require.True(t, strings.HasSuffix(ks.Key("x"), ":x"))

	_, err = redislock.NewRedsync(nil, "k", time.Second)
	require.ErrorIs(t, err, redislock.ErrInvalid)
}

func TestAcquireReleaseExtend(t *testing.T) {
	c, ks := redistest.Client(t, "redislock-test")
	ctx := context.Background()
	_, err := redislock.NewRedsync(c, "", time.Second)
	require.ErrorIs(t, err, redislock.ErrInvalid)
	_, err = redislock.NewRedsync(c, ks.Key("k"), time.Microsecond)
	require.ErrorIs(t, err, redislock.ErrInvalid)

	a, err := redislock.NewRedsync(c, ks.Key("k"), 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, ks.Key("k"), a.Name())
	// b gives up after one try: the lock is held.
	b, err := redislock.NewRedsync(c, ks.Key("k"), 10*time.Second, redsync.WithTries(1))
	require.NoError(t, err)

	require.ErrorIs(t, a.Extend(ctx), redislock.ErrNotHeld)
	require.True(t, a.Until().IsZero())
	release, err := a.Acquire(ctx)
	require.NoError(t, err)
	require.False(t, a.Until().IsZero())
	pttl, err := c.PTTL(ctx, a.Name()).Result()
	require.NoError(t, err)
	require.Greater(t, pttl, 5*time.Second, "the key carries the ttl")

	_, err = b.Acquire(ctx)
	require.ErrorIs(t, err, redislock.ErrNotAcquired)
	var taken *redsync.ErrTaken
	require.ErrorAs(t, err, &taken, "redsync's own error is kept")

	require.NoError(t, a.Extend(ctx))
	require.NoError(t, release(ctx))
	require.ErrorIs(t, release(ctx), redislock.ErrNotHeld)
	require.ErrorIs(t, a.Extend(ctx), redislock.ErrNotHeld)
	n, err := c.Exists(ctx, a.Name()).Result()
	require.NoError(t, err)
	require.Zero(t, n, "released: the key is gone")

	releaseB, err := b.Acquire(ctx)
	require.NoError(t, err, "free again")
	require.NoError(t, releaseB(ctx))
}

// A holding whose key expired (deleted here, as expiry would) or was taken
// by another is lost: release and extend say so.
func TestLostHolding(t *testing.T) {
	c, ks := redistest.Client(t, "redislock-test")
	ctx := context.Background()
	a, err := redislock.NewRedsync(c, ks.Key("lost"), 10*time.Second)
	require.NoError(t, err)
	b, err := redislock.NewRedsync(c, ks.Key("lost"), 10*time.Second)
	require.NoError(t, err)

	release, err := a.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Del(ctx, a.Name()).Err())
	require.ErrorIs(t, a.Extend(ctx), redislock.ErrLost)
	require.ErrorIs(t, release(ctx), redislock.ErrLost)

	release, err = a.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Del(ctx, a.Name()).Err())
	releaseB, err := b.Acquire(ctx)
	require.NoError(t, err, "B takes the expired lock")
	require.ErrorIs(t, a.Extend(ctx), redislock.ErrLost)
	require.ErrorIs(t, release(ctx), redislock.ErrLost, "A must not delete B's key")
	require.NoError(t, releaseB(ctx), "B still holds it")
}

func TestAcquireStopsWithContext(t *testing.T) {
	c, ks := redistest.Client(t, "redislock-test")
	a, err := redislock.NewRedsync(c, ks.Key("ctx"), 10*time.Second)
	require.NoError(t, err)
	release, err := a.Acquire(context.Background())
	require.NoError(t, err)
	defer func() { require.NoError(t, release(context.Background())) }()

	ctx, cancel := context.WithCancel(context.Background())
	b, err := redislock.NewRedsync(c, ks.Key("ctx"), 10*time.Second, redsync.WithTries(1<<30))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := b.Acquire(ctx)
		done <- err
	}()
	cancel()
	err = <-done
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, redislock.ErrNotAcquired)
}

func TestCleanupDeletesTheKeyspaceOnly(t *testing.T) {
	c, ks := redistest.Client(t, "redislock-test")
	other, err := redislock.NewKeyspace("redislock-test")
	require.NoError(t, err)
	ctx := context.Background()
	defer func() { _, _ = other.Cleanup(ctx, c) }()
	for _, k := range []string{ks.Key("a"), ks.Key("b"), other.Key("a")} {
		require.NoError(t, c.Set(ctx, k, "v", time.Minute).Err())
	}
	n, err := ks.Cleanup(ctx, c)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	keys, err := ks.Keys(ctx, c)
	require.NoError(t, err)
	require.Empty(t, keys)
	keys, err = other.Keys(ctx, c)
	require.NoError(t, err)
	require.Equal(t, []string{other.Key("a")}, keys)
}
