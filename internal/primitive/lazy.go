package primitive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/session"
)

// Lazy is the session of a lock or semaphore handle: either one the caller
// gave it (and closes), or its own, granted on first use and granted anew
// after it was lost. Safe for concurrent use.
type Lazy struct {
	client *clientv3.Client
	opts   []session.Option
	owned  bool
	id     string // random: makes Nonce unique across handles
	count  atomic.Uint64
	turn   chan struct{} // taken from the start of an acquisition until what it got ends

	mu     sync.Mutex
	s      *session.Session
	closed bool
	// last is what Current returns: the session Get last returned (nil
	// after Drop), read without mu, which a Get granting anew holds for
	// round trips.
	last atomic.Pointer[session.Session]
	// revoking counts the lost sessions being closed in the background
	// (Get); Close waits for them.
	revoking sync.WaitGroup
}

// NewLazy returns the session source of a handle: given, when not nil, or
// its own sessions created with opts. It does no I/O.
func NewLazy(client *clientv3.Client, given *session.Session, opts ...session.Option) *Lazy {
	l := &Lazy{client: client, opts: opts, owned: given == nil, s: given, id: randomID(), turn: make(chan struct{}, 1)}
	l.last.Store(given)
	return l
}

// Serially runs acquire as the handle's one acquisition at a time: a
// handle holds at most one key at a time (as sync.Mutex is held once). The
// turn is taken first — waiting for it, or failing at once with busy when
// try is set — and given back when acquire fails; when it succeeds, the
// turn lasts until EndTurn, which the acquired key's end calls
// (session.HoldConfig.OnEnd). ctx's cause is returned if it ends while waiting for the turn.
func Serially[T any](ctx context.Context, l *Lazy, try bool, busy error, acquire func(context.Context, bool) (T, error)) (T, error) {
	var zero T
	if try {
		select {
		case l.turn <- struct{}{}:
		default:
			return zero, busy
		}
	} else {
		select {
		case l.turn <- struct{}{}:
		case <-ctx.Done():
			return zero, context.Cause(ctx)
		}
	}
	v, err := acquire(ctx, try)
	if err != nil {
		l.EndTurn()
	}
	return v, err
}

// EndTurn lets the handle acquire again: the key its last acquisition got
// has ended (released or lost).
func (l *Lazy) EndTurn() { <-l.turn }

// Owned reports whether the sessions are the handle's own.
func (l *Lazy) Owned() bool { return l.owned }

// Get returns a live session. The handle's own is granted anew if it was
// lost; a given one that ended is an error wrapping session.ErrGoneWhileWaiting and
// its reason. After Close, ErrClosed.
func (l *Lazy) Get(ctx context.Context) (*session.Session, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, session.ErrClosed
	}
	if l.s != nil {
		select {
		case <-l.s.Done():
			if !l.owned {
				return nil, fmt.Errorf("%w: %w", session.ErrGoneWhileWaiting, l.s.Err())
			}
			// Revoke what is left of it (the server may keep the lease, and
			// the keys on it, until its TTL) before granting anew, as long
			// as ctx lasts: while etcd does not answer the revoke takes up
			// to session.Close's own 3s, and it goes on in the background.
			lost := l.s
			revoked := make(chan struct{})
			l.revoking.Go(func() {
				defer close(revoked)
				_ = lost.Close()
			})
			l.s = nil
			select {
			case <-revoked:
			case <-ctx.Done():
				return nil, fmt.Errorf("session: revoke the lost lease %x: %w", int64(lost.Lease()), context.Cause(ctx))
			}
		default:
			return l.s, nil
		}
	}
	s, err := session.New(ctx, l.client, l.opts...)
	if err != nil {
		return nil, err
	}
	l.s = s
	l.last.Store(s)
	return s, nil
}

// Current returns the session Get last returned: nil before the first Get
// and after Drop (after Close, the closed session; while a Get grants a
// lost one's successor, the lost one). It does no I/O and does not wait
// for a Get in progress.
func (l *Lazy) Current() *session.Session { return l.last.Load() }

// Drop forgets s, closing it, if it is the handle's own current session: an
// acquisition found its lease gone on the server before the session knew.
func (l *Lazy) Drop(s *session.Session) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.s == s && l.owned {
		_ = s.Close()
		l.s = nil
		l.last.Store(nil)
	}
}

// Close makes Get return ErrClosed and closes the handle's own session (see
// Session.Close for when that revokes its lease), then waits for the lost
// sessions Get is still revoking. A given session is left alone. Calling
// it again is a no-op.
func (l *Lazy) Close() error {
	defer l.revoking.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.owned && l.s != nil {
		return l.s.Close()
	}
	return nil
}

// Closed reports whether Close was called.
func (l *Lazy) Closed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Nonce returns a value unique to one acquisition through the handle, to
// put in its key: an acquisition that does not know whether its put was
// applied deletes the key only if it still holds this value.
func (l *Lazy) Nonce() string {
	return l.id + "-" + strconv.FormatUint(l.count.Add(1), 10)
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// LeaseGone reports whether lease no longer exists on the server: a key on
// it went because the lease expired or was revoked, not by a clean release.
// A key without a lease, or a failed request, counts as not gone.
func LeaseGone(ctx context.Context, client *clientv3.Client, lease int64) bool {
	if lease == 0 {
		return false
	}
	resp, err := client.TimeToLive(ctx, clientv3.LeaseID(lease))
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return true
	}
	return err == nil && resp.TTL == -1
}

// LeaseTTL is the time lease has left on the server: -1 when the lease is
// gone, 0 for no lease or a failed request.
func LeaseTTL(ctx context.Context, client *clientv3.Client, lease clientv3.LeaseID) time.Duration {
	if lease == clientv3.NoLease {
		return 0
	}
	resp, err := client.TimeToLive(ctx, lease)
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		return -1
	case err != nil:
		return 0
	case resp.TTL < 0:
		return -1
	}
	return time.Duration(resp.TTL) * time.Second
}
