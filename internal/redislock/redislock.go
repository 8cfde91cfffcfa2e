package redislock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"regexp"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// Errors of this package, matched with errors.Is.
var (
	// ErrInvalid: a constructor's argument cannot be used.
	ErrInvalid = errors.New("redislock: invalid")
	// ErrUnreachable: Dial got no answer from the address: nothing
	// listened there, or nothing answered within its timeout.
	ErrUnreachable = errors.New("redislock: redis unreachable")
	// ErrRefused: the server answered Dial's PING with an error (NOAUTH,
	// LOADING, ...).
	ErrRefused = errors.New("redislock: redis refused")
	// ErrNotAcquired: Acquire used up redsync's tries (redsync.ErrFailed,
	// or the last try's error) while ctx was still live.
	ErrNotAcquired = errors.New("redislock: not acquired")
	// ErrLost: the key was gone or held by someone else when the holder
	// released or extended it: it expired, and perhaps another took it.
	ErrLost = errors.New("redislock: lost")
	// ErrNotHeld: Extend with no holding, or a release called twice.
	ErrNotHeld = errors.New("redislock: not held")
)

// DefaultDialTimeout is Dial's timeout when it is given none.
const DefaultDialTimeout = 3 * time.Second

// Dial returns a go-redis client for addr (host:port) once the server has
// answered a PING within timeout (DefaultDialTimeout when zero). It returns
// an error naming addr and wrapping ErrUnreachable when no server answers
// in time, ErrRefused when it answers the PING with an error, and
// ErrInvalid for an empty addr. The caller closes the client.
func Dial(ctx context.Context, addr string, timeout time.Duration) (*redis.Client, error) {
	if addr == "" {
		return nil, fmt.Errorf("%w: empty redis address", ErrInvalid)
	}
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A plain TCP dial first: go-redis retries a failed dial and logs each
	// failure through its package-level logger, to stderr.
	conn, err := (&net.Dialer{}).DialContext(pctx, "tcp", addr)
	if err != nil {
		return nil, dialError(ctx, addr, timeout, err)
	}
	_ = conn.Close()
	// ContextTimeoutEnabled: without it go-redis bounds a reply's wait by
	// its ReadTimeout (3s) alone, not by ctx, and a server that accepted
	// but stayed silent held a 500ms Dial for 5s.
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: timeout, ContextTimeoutEnabled: true})
	if err := c.Ping(pctx).Err(); err != nil {
		_ = c.Close()
		return nil, dialError(ctx, addr, timeout, err)
	}
	return c, nil
}

// dialError says why Dial failed: ctx ended, the server answered with an
// error (ErrRefused), nothing answered within timeout, or nothing listened
// (both ErrUnreachable).
func dialError(ctx context.Context, addr string, timeout time.Duration, err error) error {
	var redisErr redis.Error
	var netErr net.Error
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("redislock: dial %s: %w", addr, ctx.Err())
	case errors.As(err, &redisErr):
		return fmt.Errorf("%w at %s: %w", ErrRefused, addr, err)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("%w: %s did not answer within %s: %w", ErrUnreachable, addr, timeout, err)
	}
	return fmt.Errorf("%w at %s: %w", ErrUnreachable, addr, err)
}

// Keyspace is one run's random key prefix on a shared Redis server.
type Keyspace struct{ prefix string }

var keyspaceWhat = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// NewKeyspace returns a keyspace "coordkit:WHAT:RANDOM:" for a run; what
// (lower-case letters, digits and dashes) says whose run it is, so that a
// key left behind can be traced. It returns ErrInvalid for another what.
func NewKeyspace(what string) (Keyspace, error) {
	if !keyspaceWhat.MatchString(what) {
		return Keyspace{}, fmt.Errorf("%w: keyspace name %q: want [a-z0-9-]+", ErrInvalid, what)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return Keyspace{prefix: "coordkit:" + what + ":" + hex.EncodeToString(b) + ":"}, nil
}

// Prefix is the prefix of every key of the keyspace.
func (k Keyspace) Prefix() string { return k.prefix }

// Key is name's key in the keyspace.
func (k Keyspace) Key(name string) string { return k.prefix + name }

// Keys returns the keys of the keyspace that exist now.
func (k Keyspace) Keys(ctx context.Context, c redis.Cmdable) ([]string, error) {
	if k.prefix == "" {
		return nil, fmt.Errorf("%w: zero Keyspace", ErrInvalid)
	}
	var out []string
	// The prefix is letters, digits, dashes and colons: no glob characters.
	iter := c.Scan(ctx, 0, k.prefix+"*", 200).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("redislock: scan %s*: %w", k.prefix, err)
	}
	return out, nil
}

// Cleanup deletes every key of the keyspace and returns how many it
// deleted. Call it at the end of a run (with a live context: the run's own
// may have ended).
func (k Keyspace) Cleanup(ctx context.Context, c redis.Cmdable) (int, error) {
	keys, err := k.Keys(ctx, c)
	if err != nil || len(keys) == 0 {
		return 0, err
	}
	n, err := c.Del(ctx, keys...).Result()
	if err != nil {
		return 0, fmt.Errorf("redislock: delete %d keys under %s: %w", len(keys), k.prefix, err)
	}
	return int(n), nil
}

// Redsync is a redsync lock on one name, over one client.
type Redsync struct {
	name string
	rs   *redsync.Redsync
	opts []redsync.Option

	mu   sync.Mutex
	held *redsync.Mutex // the current holding, nil when none
}

// NewRedsync returns the lock on the key name (use Keyspace.Key) over
// client, with expiry ttl (redsync's default 8s when zero) and redsync's
// options after it (WithTries, WithRetryDelay, ...; a WithExpiry among them
// wins over ttl). Without options it is redsync as a user runs it: 32
// tries, a random 50..250ms between them. It returns ErrInvalid for a nil
// client, an empty name or a ttl that is negative or below a millisecond
// (Redis's PX unit).
func NewRedsync(client redis.UniversalClient, name string, ttl time.Duration, opts ...redsync.Option) (*Redsync, error) {
	switch {
	case client == nil:
		return nil, fmt.Errorf("%w: nil redis client", ErrInvalid)
	case name == "":
		return nil, fmt.Errorf("%w: empty lock name", ErrInvalid)
	case ttl < 0 || (ttl > 0 && ttl < time.Millisecond):
		return nil, fmt.Errorf("%w: ttl %s: want 0 (8s) or at least 1ms", ErrInvalid, ttl)
	}
	var all []redsync.Option
	if ttl > 0 {
		all = append(all, redsync.WithExpiry(ttl))
	}
	all = append(all, opts...)
	return &Redsync{name: name, rs: redsync.New(goredis.NewPool(client)), opts: all}, nil
}

// Name is the lock's Redis key.
func (l *Redsync) Name() string { return l.name }

// Acquire takes the lock: redsync's LockContext, which tries SET NX PX up
// to its tries with its retry delay between them. It returns the function
// that releases this holding. It returns an error wrapping ErrNotAcquired
// (and redsync's own error) when the tries ran out, and one wrapping ctx's
// error when ctx ended first.
//
// The release function deletes the key if it still holds this holding's
// random value; it returns an error wrapping ErrLost when the key had
// expired or was someone else's, ErrNotHeld when called again, and the
// client's error (wrapped) when Redis did not answer.
func (l *Redsync) Acquire(ctx context.Context) (release func(context.Context) error, err error) {
	m := l.rs.NewMutex(l.name, l.opts...)
	if err := m.LockContext(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("redislock: acquire %s: %w", l.name, ctx.Err())
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrNotAcquired, l.name, err)
	}
	l.mu.Lock()
	l.held = m
	l.mu.Unlock()
	var once sync.Once
	return func(ctx context.Context) error {
		err := fmt.Errorf("%w: %s: released already", ErrNotHeld, l.name)
		once.Do(func() {
			l.mu.Lock()
			if l.held == m {
				l.held = nil
			}
			l.mu.Unlock()
			ok, uerr := m.UnlockContext(ctx)
			err = outcome("release", l.name, ok, uerr)
		})
		return err
	}, nil
}

// Extend resets the current holding's expiry to the lock's ttl if the key
// still holds its value. It returns ErrNotHeld when there is no holding,
// an error wrapping ErrLost when the key expired or is someone else's, and
// the client's error (wrapped) when Redis did not answer.
func (l *Redsync) Extend(ctx context.Context) error {
	l.mu.Lock()
	m := l.held
	l.mu.Unlock()
	if m == nil {
		return fmt.Errorf("%w: %s", ErrNotHeld, l.name)
	}
	ok, err := m.ExtendContext(ctx)
	return outcome("extend", l.name, ok, err)
}

// Until is when the current holding's validity ends by the holder's own
// clock (redsync's estimate: acquired + ttl - drift), zero when there is
// no holding. A paused holder's clock reading is what it is worth.
func (l *Redsync) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		return time.Time{}
	}
	return l.held.Until()
}

// outcome maps redsync's (ok, err) of a release or extend.
func outcome(op, name string, ok bool, err error) error {
	var taken *redsync.ErrTaken
	switch {
	case ok:
		return nil
	case errors.Is(err, redsync.ErrLockAlreadyExpired), errors.As(err, &taken), errors.Is(err, redsync.ErrExtendFailed):
		return fmt.Errorf("%w: %s %s: %w", ErrLost, op, name, err)
	case err == nil:
		return fmt.Errorf("%w: %s %s", ErrLost, op, name)
	}
	return fmt.Errorf("redislock: %s %s: %w", op, name, err)
}
