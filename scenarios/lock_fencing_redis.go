package scenarios

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/claim"
	"github.com/coordkit/coordkit/cluster"
)

// leaseLock is the lock of lock-without-fencing's Redis round: a lease
// with no token. A takes it and freezes; B retries until A's lease has
// expired.
type leaseLock interface {
	// describe says which lock this is, for the report.
	describe() string
	// real is true for a real Redis lock, false for the model.
	real() bool
	takeA(ctx context.Context) error
	// waitB retries until B holds the lock.
	waitB(ctx context.Context) error
	releaseB(ctx context.Context) error
	// releaseA is A's release once it woke up and wrote; it says what
	// the lock tells A then (nil: nothing).
	releaseA(ctx context.Context) error
}

// modelLease models SET NX PX with a claim on an etcd lease that A does
// not renew: the scenario runs where there is no Redis.
type modelLease struct {
	cliA, cliB *clientv3.Client
	opts       []claim.Option
}

const modelLeaseName = "redis-style-balance"

func (m *modelLease) describe() string {
	return "a model of a Redis lock (SET NX PX as a claim on an etcd lease; --redis ADDR plays it on a real Redis)"
}
func (m *modelLease) real() bool { return false }

func (m *modelLease) takeA(ctx context.Context) error {
	ca, err := claim.Claim(ctx, m.cliA, modelLeaseName, "A", m.opts...)
	if err == nil && !ca.Won {
		err = errors.New("not won")
	}
	return err
}

func (m *modelLease) waitB(ctx context.Context) error {
	for {
		cb, err := claim.Claim(ctx, m.cliB, modelLeaseName, "B", m.opts...)
		if err != nil || cb.Won {
			return err
		}
		if !cluster.Sleep(ctx, 50*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// The model's claims expire with their leases; there is nothing to release.
func (m *modelLease) releaseB(context.Context) error { return nil }
func (m *modelLease) releaseA(context.Context) error { return nil }

// redsyncLease is the real thing: redsync (github.com/go-redsync/redsync/v4)
// over go-redis on a Redis server, with the keys of the run under a random
// prefix deleted at the end.
type redsyncLease struct {
	addr   string
	client *redis.Client
	prefix string
	a, b   *redsync.Mutex
}

// redisDialTimeout bounds the wait for a Redis server that does not answer.
const redisDialTimeout = 3 * time.Second

// dialRedsyncLease connects to addr (an error naming it when nothing
// listens there, nothing answers within redisDialTimeout or PING fails) and makes A's and B's redsync mutexes with
// expiry ttl: A tries once, B retries (redsync's default delay, a random
// 50..250ms) until ctx ends.
func dialRedsyncLease(ctx context.Context, addr string, ttl time.Duration) (*redsyncLease, error) {
	dctx, cancel := context.WithTimeout(ctx, redisDialTimeout)
	defer cancel()
	// A plain dial first: go-redis logs failed dials to stderr.
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot reach redis at %s (dial timeout %s): %w", addr, redisDialTimeout, err)
	}
	_ = conn.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: redisDialTimeout, ContextTimeoutEnabled: true})
	if err := c.Ping(dctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("redis at %s: PING: %w", addr, err)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	l := &redsyncLease{addr: addr, client: c, prefix: "coordkit:scenario-lock-without-fencing:" + hex.EncodeToString(b) + ":"}
	rs := redsync.New(goredis.NewPool(c))
	key := l.prefix + "balance"
	l.a = rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1))
	l.b = rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1<<30))
	return l, nil
}

func (l *redsyncLease) describe() string {
	return fmt.Sprintf("a real Redis lock: redsync v4 over go-redis on Redis %s, keys under %s", l.addr, l.prefix)
}
func (l *redsyncLease) real() bool                         { return true }
func (l *redsyncLease) takeA(ctx context.Context) error    { return l.a.LockContext(ctx) }
func (l *redsyncLease) waitB(ctx context.Context) error    { return l.b.LockContext(ctx) }
func (l *redsyncLease) releaseB(ctx context.Context) error { return unlockErr(l.b.UnlockContext(ctx)) }
func (l *redsyncLease) releaseA(ctx context.Context) error { return unlockErr(l.a.UnlockContext(ctx)) }

func unlockErr(ok bool, err error) error {
	if !ok && err == nil {
		err = errors.New("redsync: the key was not this holder's")
	}
	if ok {
		return nil
	}
	return err
}

// close deletes every key under the run's prefix and closes the client.
func (l *redsyncLease) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	iter := l.client.Scan(ctx, 0, l.prefix+"*", 100).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if len(keys) > 0 {
		_ = l.client.Del(ctx, keys...).Err()
	}
	_ = l.client.Close()
}
