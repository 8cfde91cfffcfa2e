package safety

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/redislock"
	"github.com/coordkit/coordkit/session"
)

// ErrRedisUnreachable is returned by Run when the Redis server of
// LockRedsync does not answer a PING within the dial timeout.
var ErrRedisUnreachable = errors.New("safety: redis unreachable")

// redsyncLocks is the minimal redsync adapter the check needs, behind the
// Lock interface: one go-redis client (default options, as a user would
// use it), redsync's Mutex with default retries, keys under a random
// per-run prefix that Close deletes. It dials through internal/redislock;
// it keeps its own Mutex handling because the check numbers each grant
// (INCR) and shares the prefix with process clients.
type redsyncLocks struct {
	client *redis.Client
	rs     *redsync.Redsync
	addr   string
	prefix string
	ttl    time.Duration
}

// dialRedsync connects to addr and checks it answers within timeout. Its
// keys go under a new random prefix.
func dialRedsync(ctx context.Context, addr string, timeout, ttl time.Duration) (*redsyncLocks, error) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return dialRedsyncPrefix(ctx, addr, "coordkit-safety-"+hex.EncodeToString(b)+"/", timeout, ttl)
}

func dialRedsyncPrefix(ctx context.Context, addr, prefix string, timeout, ttl time.Duration) (*redsyncLocks, error) {
	// redislock.Dial tries a plain TCP dial first, so an unreachable server
	// costs one line of ours instead of go-redis's own retries and log lines.
	client, err := redislock.Dial(ctx, addr, timeout)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %w", ErrRedisUnreachable, addr, err)
	}
	return &redsyncLocks{client: client, rs: redsync.New(goredis.NewPool(client)), addr: addr, prefix: prefix, ttl: ttl}, nil
}

// acquire takes a new redsync Mutex (each holding has its own random
// value) and, once granted, numbers the grant with INCR of one Redis key
// shared by the in-process and the process clients: redsync has no token.
// The number orders holders for the checker; the resource never fences
// with it.
func (l *redsyncLocks) acquire(ctx context.Context) (redsyncTenure, error) {
	m := l.rs.NewMutex(l.lockKey(), redsync.WithExpiry(l.ttl))
	if err := m.LockContext(ctx); err != nil {
		return redsyncTenure{}, err
	}
	n, err := l.client.Incr(ctx, l.grantsKey()).Result()
	if err != nil {
		_, _ = m.UnlockContext(context.Background())
		return redsyncTenure{}, fmt.Errorf("safety: number the redsync grant: %w", err)
	}
	return redsyncTenure{m: m, token: uint64(n)}, nil
}

// lockKey is the lock's Redis key, and grantsKey the key whose INCR numbers
// the grants: the same for redsync's Mutex and the Python clients' redis-py
// Lock (both SET the key NX with an expiry and delete it only if their own
// value is still there), so the two exclude each other.
func (l *redsyncLocks) lockKey() string   { return l.prefix + Scope }
func (l *redsyncLocks) grantsKey() string { return l.prefix + "grants" }

// lockFor is the lockFactory: every client locks the same name.
func (l *redsyncLocks) lockFor(_ *clientv3.Client, _ int) (Lock, error) { return redsyncLock{l}, nil }

// closeClient closes the client without deleting keys.
func (l *redsyncLocks) closeClient() error { return l.client.Close() }

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

func (a redsyncLock) Acquire(ctx context.Context) (Tenure, error) {
	t, err := a.l.acquire(ctx)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (a redsyncLock) Close() error { return nil }

type redsyncTenure struct {
	m     *redsync.Mutex
	token uint64
}

func (t redsyncTenure) Token() fencing.Token { return fencing.Token(t.token) }
func (t redsyncTenure) Scope() string        { return Scope }
func (t redsyncTenure) Slot() int            { return 0 }
func (t redsyncTenure) Reader() bool         { return false }

// Alive is redsync's own belief: its validity time has not passed.
func (t redsyncTenure) Alive() bool { return time.Now().Before(t.m.Until()) }

// Release unlocks; a lock that expired (or is someone else's now) is
// session.ErrNotHeld, which ends the worker's retries.
func (t redsyncTenure) Release(ctx context.Context) error {
	ok, err := t.m.UnlockContext(ctx)
	switch {
	case ok:
		return nil
	case errors.Is(err, redsync.ErrLockAlreadyExpired):
		return session.ErrNotHeld
	case err == nil:
		return session.ErrNotHeld
	}
	return err
}

// RedsyncHold is one holding of the run's redsync lock by a process
// client (`coordctl check redsync-lock`): the supervisor of its command,
// as `coordctl lock` is for coordkit's lock.
type RedsyncHold struct {
	l *redsyncLocks
	t redsyncTenure
}

// HoldRedsync takes the redsync lock of the run whose keys are under
// prefix, on the Redis at addr.
func HoldRedsync(ctx context.Context, addr, prefix string, ttl, dialTimeout time.Duration) (*RedsyncHold, error) {
	l, err := dialRedsyncPrefix(ctx, addr, prefix, dialTimeout, ttl)
	if err != nil {
		return nil, err
	}
	t, err := l.acquire(ctx)
	if err != nil {
		_ = l.closeClient()
		return nil, err
	}
	return &RedsyncHold{l: l, t: t}, nil
}

// Token is the grant's number (not a fencing token).
func (h *RedsyncHold) Token() fencing.Token { return fencing.Token(h.t.token) }

// Release unlocks (an expired lock is not an error here) and closes the
// client.
func (h *RedsyncHold) Release(ctx context.Context) error {
	err := h.t.Release(ctx)
	if errors.Is(err, session.ErrNotHeld) {
		err = nil
	}
	if cerr := h.l.closeClient(); err == nil {
		err = cerr
	}
	return err
}
