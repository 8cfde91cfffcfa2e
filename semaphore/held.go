package semaphore

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// Held is a slot that was acquired: a session.HeldKey on the slot's key. It
// is held until Release or until it is lost; Lost and Context tell which
// moment that is.
type Held struct {
	s    *Semaphore
	k    *session.HeldKey
	slot int
}

func (a *attempt) held(slot int, key string, rev int64) *Held {
	k := a.sess.Hold(key, rev, session.WithReleaseCause(errReleased), session.WithOnEnd(a.s.sess.EndTurn), session.WithReleaseKeepsLease(), session.WithKind("semaphore"))
	k.Granted(a.started)
	return &Held{s: a.s, k: k, slot: slot}
}

// Token returns the fencing token: the create revision of the slot key.
// Tokens grow from holder to holder of one slot; fence per Scope.
func (h *Held) Token() fencing.Token { return h.k.Token() }

// Slot returns the slot number, in [0, limit).
func (h *Held) Slot() int { return h.slot }

// Scope returns the fencing scope of the slot, "NAME#slot": give it to the
// protected resource with the token.
func (h *Held) Scope() string { return Scope(h.s.name, h.slot) }

// Key returns the slot key in etcd.
func (h *Held) Key() string { return h.k.Key() }

// Lease returns the lease the slot key is attached to.
func (h *Held) Lease() clientv3.LeaseID { return h.k.Lease() }

// Name returns the semaphore's name.
func (h *Held) Name() string { return h.s.name }

// HeldKey returns the held key the slot is.
func (h *Held) HeldKey() *session.HeldKey { return h.k }

// Lost is closed when the slot is lost while held: the session's local
// deadline passed, the lease was revoked, or the slot key was deleted or
// replaced. It is not closed by Release.
func (h *Held) Lost() <-chan struct{} { return h.k.Lost() }

// Context is cancelled when the slot is lost (cause wraps ErrLost and the
// reason) or released (cause wraps ErrNotHeld).
func (h *Held) Context() context.Context { return h.k.Context() }

// Err returns nil while held; after a loss an error wrapping ErrLost and
// the reason; after Release an error wrapping ErrNotHeld.
func (h *Held) Err() error { return h.k.Err() }

// Alive reports at this instant whether the slot can still be trusted.
func (h *Held) Alive() bool { return h.k.Alive() }

// Release gives the slot back: it deletes the slot key only if it still has
// this hold's create revision, so a late or retried Release never deletes a
// later holder's slot. If the request fails, the slot counts as released
// locally and Release may be called again. On a lost slot it still removes
// the key if it is there and returns an error wrapping ErrNotHeld and
// ErrLost; after a successful Release it returns ErrNotHeld. A clean
// Release never looks like a loss to a waiter with a lock delay (see
// session.Session.Close).
func (h *Held) Release(ctx context.Context) error { return h.k.Release(ctx) }

// IsOwner returns a comparison that holds exactly while this slot is held
// in etcd (its key exists with this create revision). Guard your own etcd
// transaction with it so that its writes commit only while the slot is held;
// Txn does exactly that.
func (h *Held) IsOwner() clientv3.Cmp { return h.k.IsOwner() }

// Txn applies ops in one etcd transaction guarded by IsOwner. It returns the
// response when the guard held and ops were applied; an error wrapping
// ErrNotOwner (and the response) when the slot was no longer held in etcd,
// nothing was applied and the slot counts as lost; or the request's error,
// in which case the transaction may or may not have been applied.
func (h *Held) Txn(ctx context.Context, ops ...clientv3.Op) (*clientv3.TxnResponse, error) {
	return h.k.Txn(ctx, ops...)
}
