package lock

import (
	"context"
	"sync"

	"github.com/coordkit/coordkit/session"
)

// Held is a lock that was acquired: a session.HeldKey (embedded: its
// Token, Key, Lease, Lost, Context, Err, Alive, IsOwner and Txn are the
// lock's) under the lock's prefix, plus the lock's name, mode and Unlock.
// It is held until Unlock or until it is lost; see package session for what
// Lost, Context and Err mean, the same for every held key.
type Held struct {
	*session.HeldKey
	m *Mutex
}

// Name returns the lock's name (without the prefix).
func (h *Held) Name() string { return h.m.name }

// Scope returns the fencing scope of the token: the lock's key prefix in
// etcd, PREFIX+NAME+"/", the same for every spelling of prefix and name
// that reaches its keys (and an election's of the same name: they exclude
// each other), and never a semaphore slot's scope.
func (h *Held) Scope() string { return h.m.cfg.Scope() }

// Shared reports whether this is a read lock of an RWMutex (RLock).
func (h *Held) Shared() bool { return h.m.kind == kindRead }

// Unlock releases the lock (HeldKey.Release): it deletes the holder's key,
// and a late or retried Unlock never deletes a newer lock of the same
// session (the package doc says how: a compare on the create revision, or
// on the Mutex's own sessions a plain first delete). If the request
// fails, the lock counts as released locally (Context is cancelled) and
// Unlock may be called again to retry the delete; until it succeeds the
// Mutex cannot be locked again, unless the lock is lost meanwhile (or the
// Mutex closed). On a lock that was lost Unlock still removes the key if it
// is there, and returns an error wrapping session.ErrNotHeld and the loss
// (session.ErrLost); after a successful Unlock it returns
// session.ErrNotHeld. Pass a context that outlives the caller's (as
// context.WithoutCancel(ctx) with a timeout does): an Unlock cancelled
// before its delete leaves the key to expire with the lease.
//
// A clean Unlock never looks like a loss to a waiter with a lock delay,
// whether Close (of the Mutex or of a shared session) comes right after it
// or not: see session.Session.Close.
func (h *Held) Unlock(ctx context.Context) error { return h.Release(ctx) }

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
