package lock

import (
	"context"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// Held is a lock that was acquired: a session.HeldKey under the lock's
// prefix. It is held until Unlock or until it is lost; Lost and Context
// tell which moment that is.
type Held struct {
	m *Mutex
	k *session.HeldKey
}

// Token returns the fencing token: the create revision of the holder's key.
func (h *Held) Token() fencing.Token { return h.k.Token() }

// Key returns the holder's key in etcd.
func (h *Held) Key() string { return h.k.Key() }

// Lease returns the lease the key is attached to.
func (h *Held) Lease() clientv3.LeaseID { return h.k.Lease() }

// Name returns the lock's name.
func (h *Held) Name() string { return h.m.name }

// Shared reports whether this is a read lock of an RWMutex (RLock).
func (h *Held) Shared() bool { return h.m.kind == kindRead }

// HeldKey returns the held key the lock is.
func (h *Held) HeldKey() *session.HeldKey { return h.k }

// Lost is closed when the lock is lost while held: the session's local
// deadline passed (keepalives failing, or the process was frozen), the lease
// was revoked, or the key was deleted or replaced. It is not closed by Unlock.
func (h *Held) Lost() <-chan struct{} { return h.k.Lost() }

// Context is cancelled when the lock is lost (its cause wraps ErrLost and
// the reason) or unlocked (its cause wraps ErrNotHeld). Bind the protected
// work to it.
func (h *Held) Context() context.Context { return h.k.Context() }

// Err returns nil while the lock is held; after a loss an error wrapping
// ErrLost and the reason (session.ErrExpired, session.ErrRevoked,
// session.ErrClosed or ErrKeyGone); after Unlock an error wrapping ErrNotHeld.
func (h *Held) Err() error { return h.k.Err() }

// Alive reports at this instant whether the lock can still be trusted: not
// lost, not unlocked, and the session's local deadline not passed. Check it
// right before a protected write; send the token with the write all the
// same (see the package doc).
func (h *Held) Alive() bool { return h.k.Alive() }

// Unlock releases the lock: it deletes the holder's key only if it still has
// this lock's create revision, so a late or retried Unlock never deletes a
// newer lock of the same session. If the request fails, the lock counts as
// released locally (Context is cancelled) and Unlock may be called again to
// retry the delete; until it succeeds the Mutex cannot be locked again,
// unless the lock is lost meanwhile (or the Mutex closed). On a lock that
// was lost Unlock still removes the key if it is there, and returns an error
// wrapping ErrNotHeld and the loss (ErrLost); after a successful Unlock it
// returns ErrNotHeld.
//
// A clean Unlock never looks like a loss to a waiter with a lock delay,
// whether Close (of the Mutex or of a shared session) comes right after it
// or not: see session.Session.Close.
func (h *Held) Unlock(ctx context.Context) error { return h.k.Release(ctx) }

// IsOwner returns a comparison that holds exactly while this lock is held
// in etcd: the holder's key exists with this lock's create revision (the
// token), as concurrency.Mutex.IsOwner. Guard your own etcd transaction
// with it so that its writes commit only while the lock is held:
//
//	resp, err := cli.Txn(ctx).If(held.IsOwner()).Then(clientv3.OpPut(k, v)).Commit()
//	if err == nil && !resp.Succeeded {
//		// nothing applied: the lock is no longer held
//	}
//
// Held.Txn does exactly this and turns Succeeded=false into an error
// matching ErrNotOwner. It does not depend on Held's local state: after
// Unlock or a loss it is simply false in etcd.
func (h *Held) IsOwner() clientv3.Cmp { return h.k.IsOwner() }

// Txn applies ops in one etcd transaction guarded by IsOwner. It returns the
// response when the guard held and ops were applied; an error wrapping
// ErrNotOwner (and the response) when the lock was no longer held in etcd
// and nothing was applied (the lock then counts as lost); or the request's
// error, in which case the transaction may or may not have been applied.
func (h *Held) Txn(ctx context.Context, ops ...clientv3.Op) (*clientv3.TxnResponse, error) {
	return h.k.Txn(ctx, ops...)
}

// grantGate frees the Mutex for the next Lock exactly once, when an
// acquisition that was granted ends (unlocked or lost). An attempt that was
// never granted is freed by Lock itself.
type grantGate struct {
	m       *Mutex
	mu      sync.Mutex
	granted bool
	ended   bool
}

// onEnd is the held key's end: free the Mutex if the key was granted.
func (g *grantGate) onEnd() {
	g.mu.Lock()
	g.ended = true
	free := g.granted
	g.mu.Unlock()
	if free {
		g.m.sess.EndTurn()
	}
}

// grant marks the attempt granted; if its key already ended, the Mutex is
// free again at once.
func (g *grantGate) grant() {
	g.mu.Lock()
	g.granted = true
	free := g.ended
	g.mu.Unlock()
	if free {
		g.m.sess.EndTurn()
	}
}
