package safety

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/lock"
)

// ErrRedisUnreachable is returned by Run when the Redis server of
// LockRedsync does not answer a PING within the dial timeout.
var ErrRedisUnreachable = errors.New("safety: redis unreachable")

// redsyncLocks is the minimal redsync adapter the check needs, behind the
// Lock interface: one go-redis client (default options, as a user would
// use it), redsync's Mutex with default retries, keys under a random
// per-run prefix that Close deletes. (internal/redislock, written in
// parallel, is the project's adapter; the two can be unified.)
type redsyncLocks struct {
	client *redis.Client
	rs     *redsync.Redsync
	prefix string
	ttl    time.Duration
	tokens *atomic.Uint64
}

// dialRedsync connects to addr and checks it answers within timeout.
func dialRedsync(ctx context.Context, addr string, timeout, ttl time.Duration, tokens *atomic.Uint64) (*redsyncLocks, error) {
	client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: timeout, MaxRetries: -1})
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("%w at %s: %w", ErrRedisUnreachable, addr, err)
	}
	// Reconnects during the run retry as go-redis does by default.
	_ = client.Close()
	client = redis.NewClient(&redis.Options{Addr: addr, DialTimeout: timeout})
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return &redsyncLocks{
		client: client, rs: redsync.New(goredis.NewPool(client)),
		prefix: "coordkit-safety-" + hex.EncodeToString(b) + "/", ttl: ttl, tokens: tokens,
	}, nil
}

// lockFor is the lockFactory: every client locks the same name.
func (l *redsyncLocks) lockFor(_ *clientv3.Client, _ int) (Lock, error) { return redsyncLock{l}, nil }

// Close deletes the run's keys and closes the client.
func (l *redsyncLocks) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var keys []string
	iter := l.client.Scan(ctx, 0, l.prefix+"*", 100).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if len(keys) > 0 {
		_ = l.client.Del(ctx, keys...).Err()
	}
	return l.client.Close()
}

type redsyncLock struct{ l *redsyncLocks }

// Acquire takes a new redsync Mutex (each holding has its own random
// value) and, once granted, numbers the grant: redsync has no token.
func (a redsyncLock) Acquire(ctx context.Context) (Tenure, error) {
	m := a.l.rs.NewMutex(a.l.prefix+Scope, redsync.WithExpiry(a.l.ttl))
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return redsyncTenure{m: m, token: a.l.tokens.Add(1)}, nil
}

func (a redsyncLock) Close() error { return nil }

type redsyncTenure struct {
	m     *redsync.Mutex
	token uint64
}

func (t redsyncTenure) Token() uint64 { return t.token }
func (t redsyncTenure) Scope() string { return Scope }
func (t redsyncTenure) Slot() int     { return 0 }
func (t redsyncTenure) Reader() bool  { return false }

// Alive is redsync's own belief: its validity time has not passed.
func (t redsyncTenure) Alive() bool { return time.Now().Before(t.m.Until()) }

// Release unlocks; a lock that expired (or is someone else's now) is
// lock.ErrNotHeld, which ends the worker's retries.
func (t redsyncTenure) Release(ctx context.Context) error {
	ok, err := t.m.UnlockContext(ctx)
	switch {
	case ok:
		return nil
	case errors.Is(err, redsync.ErrLockAlreadyExpired):
		return lock.ErrNotHeld
	case err == nil:
		return lock.ErrNotHeld
	}
	return err
}
