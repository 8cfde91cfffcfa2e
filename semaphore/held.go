package semaphore

import (
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/session"
)

// Held is a slot that was acquired: a session.HeldKey on the slot's key
// (embedded: its Token, Key, Lease, Lost, Context, Err, Alive, IsOwner,
// Txn and Release are the slot's), plus the semaphore's name and the slot.
// It is held until Release or until it is lost; see package session for
// what Lost, Context and Err mean, the same for every held key. Release
// deletes the slot key only if it still has this hold's create revision,
// so a late or retried Release never deletes a later holder's slot, and a
// clean Release never looks like a loss to a waiter with a lock delay.
type Held struct {
	*session.HeldKey
	s    *Semaphore
	slot int
}

func (a *attempt) held(slot int, key string, rev int64) *Held {
	k := a.sess.Hold(key, rev, session.HoldConfig{ReleaseCause: errReleased, ReleaseKeepsLease: true, Kind: "semaphore", LossWatchDelay: primitive.LossWatchDelay})
	k.Granted(a.started)
	return &Held{HeldKey: k, s: a.s, slot: slot}
}

// Slot returns the slot number, in [0, limit).
func (h *Held) Slot() int { return h.slot }

// Scope returns the fencing scope of the slot: the slot's etcd key,
// PREFIX+NAME/slots/SLOT, the same for every spelling of prefix and name
// that reaches it, and never a lock's or another slot's scope. Give it to
// the protected resource with the token. Tokens grow from holder to holder
// of one slot.
func (h *Held) Scope() string { return h.s.cfg.SlotScope(h.slot) }

// Name returns the semaphore's name (without the prefix).
func (h *Held) Name() string { return h.s.name }
