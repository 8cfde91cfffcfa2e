package report

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/semaphore"
)

// LockHeld is a held lock as `coordctl lock` prints it once it holds it
// (the lease in hex, "shared" only for a reader).
type LockHeld struct {
	Name   string        `json:"name"`
	Scope  string        `json:"scope"`
	Key    string        `json:"key"`
	Token  fencing.Token `json:"token"`
	Lease  string        `json:"lease"`
	Shared bool          `json:"shared,omitempty"`
}

// LockHeldOf is what is printed of h: the lock's name (without the
// prefix), its fencing scope, key, token, lease and mode.
func LockHeldOf(h *lock.Held) LockHeld {
	return LockHeld{Name: h.Name(), Scope: h.Scope(), Key: h.Key(), Token: h.Token(), Lease: fmt.Sprintf("%x", int64(h.Lease())), Shared: h.Shared()}
}

// String is "holding lock NAME scope=S key=K token=T lease=L" ("read lock"
// when shared).
func (r LockHeld) String() string {
	what := "lock"
	if r.Shared {
		what = "read lock"
	}
	return fmt.Sprintf("holding %s %s scope=%s key=%s token=%d lease=%s", what, r.Name, r.Scope, r.Key, r.Token, r.Lease)
}

// LockWaiting is the notice `coordctl lock` prints while it waits.
func LockWaiting(w lock.Waiting) string {
	return fmt.Sprintf("waiting for lock %s (held by key %s, token %d)...", w.Name, w.HolderKey, w.HolderToken)
}

// LockStatus is what `coordctl lock status` prints of a lock named Name.
type LockStatus struct {
	Name string
	primitive.Status
}

func (r LockStatus) entries() (holders, waiters []statusEntry) {
	holders, waiters = []statusEntry{}, []statusEntry{}
	for _, e := range r.Holders {
		holders = append(holders, withMode(entryOf(e, true), e))
	}
	for _, e := range r.Waiters {
		waiters = append(waiters, withMode(entryOf(e, false), e))
	}
	return holders, waiters
}

func withMode(se statusEntry, e primitive.Entry) statusEntry {
	se.Mode = "exclusive"
	if e.Shared {
		se.Mode = "shared"
	}
	return se
}

// MarshalJSON writes {"name","revision","held","holders":[{"key","token",
// "lease","mode","ttl_s"}],"waiters":[...]}: the lease in hex, ttl_s in
// seconds (-1: the lease was gone), waiters without ttl_s.
func (r LockStatus) MarshalJSON() ([]byte, error) {
	h, w := r.entries()
	return json.Marshal(statusJSON{Name: r.Name, Revision: r.Revision, Held: len(h) > 0, Holders: h, Waiters: w})
}

// String is the status as text: "lock NAME: held at revision R by H, W
// waiting" (or "free ..."), then a line per holder and waiter.
func (r LockStatus) String() string {
	h, w := r.entries()
	return strings.TrimSuffix(formatStatus("lock "+r.Name, r.Revision, "", h, w), "\n")
}

// SemHeld is a held slot as `coordctl sem` prints it (the lease in hex).
type SemHeld struct {
	Name  string        `json:"name"`
	Limit int           `json:"limit"`
	Slot  int           `json:"slot"`
	Scope string        `json:"scope"`
	Key   string        `json:"key"`
	Token fencing.Token `json:"token"`
	Lease string        `json:"lease"`
}

// SemHeldOf is what is printed of h: the semaphore's name (without the
// prefix) and limit, the slot and its fencing scope, key, token and lease.
func SemHeldOf(h *semaphore.Held, limit int) SemHeld {
	return SemHeld{Name: h.Name(), Limit: limit, Slot: h.Slot(), Scope: h.Scope(), Key: h.Key(),
		Token: h.Token(), Lease: fmt.Sprintf("%x", int64(h.Lease()))}
}

// String is "holding semaphore NAME slot=I scope=S key=K token=T lease=L".
func (r SemHeld) String() string {
	return fmt.Sprintf("holding semaphore %s slot=%d scope=%s key=%s token=%d lease=%s", r.Name, r.Slot, r.Scope, r.Key, r.Token, r.Lease)
}

// SemWaiting is the notice `coordctl sem` prints while it waits.
func SemWaiting(w semaphore.Waiting) string {
	why := fmt.Sprintf("all %d slots held", w.Limit)
	if w.Ahead {
		why = "others wait ahead"
	}
	return fmt.Sprintf("waiting for semaphore %s (%s)...", w.Name, why)
}

// SemStatus is what `coordctl sem status` prints of the semaphore named
// Name: its holders' scopes are their slot keys.
type SemStatus struct {
	Name string
	primitive.Status
}

func (r SemStatus) entries() (holders, waiters []statusEntry) {
	holders, waiters = []statusEntry{}, []statusEntry{}
	for _, e := range r.Holders {
		se := entryOf(e, true)
		slot := e.Slot
		se.Slot, se.Scope = &slot, e.Key // a slot's scope is its key (semaphore.Held.Scope)
		holders = append(holders, se)
	}
	for _, e := range r.Waiters {
		waiters = append(waiters, entryOf(e, false))
	}
	return holders, waiters
}

// MarshalJSON writes {"name","revision","limit","held","holders":[{"key",
// "token","lease","slot","scope","ttl_s"}],"waiters":[{"key","token",
// "lease"}]}: the lease in hex, ttl_s in seconds (-1: the lease was gone).
func (r SemStatus) MarshalJSON() ([]byte, error) {
	h, w := r.entries()
	limit := r.Limit
	return json.Marshal(statusJSON{Name: r.Name, Revision: r.Revision, Limit: &limit, Held: len(h) > 0, Holders: h, Waiters: w})
}

// String is the status as text: "semaphore NAME: held at revision R,
// limit L by H, W waiting" (or "free ...", "no limit stored"), then a line
// per holder and waiter.
func (r SemStatus) String() string {
	limit := ", no limit stored"
	if r.Limit > 0 {
		limit = fmt.Sprintf(", limit %d", r.Limit)
	}
	h, w := r.entries()
	return strings.TrimSuffix(formatStatus("semaphore "+r.Name, r.Revision, limit, h, w), "\n")
}

// SemLimit is what `coordctl sem set-limit` prints.
type SemLimit struct {
	Name  string `json:"name"`
	Limit int    `json:"limit"`
}

func (r SemLimit) String() string { return fmt.Sprintf("ok semaphore %s limit=%d", r.Name, r.Limit) }

// SemDeleted is what `coordctl sem delete` prints: whether there was
// anything to delete.
type SemDeleted struct {
	Name    string `json:"name"`
	Deleted bool   `json:"deleted"`
}

func (r SemDeleted) String() string {
	if !r.Deleted {
		return "semaphore " + r.Name + ": nothing to delete"
	}
	return "deleted semaphore " + r.Name
}
