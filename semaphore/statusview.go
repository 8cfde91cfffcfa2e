package semaphore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// The printed forms of a Report: what `coordctl sem status` prints.

func (r Report) entries() (holders, waiters []session.StatusEntry) {
	holders, waiters = []session.StatusEntry{}, []session.StatusEntry{}
	for _, e := range r.Holders {
		se := session.NewStatusEntry(e.Key, e.Token, e.Lease).WithTTL(e.TTL)
		slot := e.Slot
		se.Slot, se.Scope = &slot, e.Scope
		holders = append(holders, se)
	}
	for _, e := range r.Waiters {
		waiters = append(waiters, session.NewStatusEntry(e.Key, e.Token, e.Lease))
	}
	return holders, waiters
}

// MarshalJSON writes {"name","revision","limit","held","holders":[{"key",
// "token","lease","slot","scope","ttl_s"}],"waiters":[{"key","token",
// "lease"}]}: the lease in hex, ttl_s in seconds (-1: the lease was gone).
func (r Report) MarshalJSON() ([]byte, error) {
	h, w := r.entries()
	limit := r.Limit
	return json.Marshal(session.StatusReport{Name: r.Name, Revision: r.Revision, Limit: &limit, Held: r.Held(), Holders: h, Waiters: w})
}

// String is the report as text: "semaphore NAME: held at revision R,
// limit L by H, W waiting" (or "free ...", "no limit stored"), then a line
// per holder and waiter.
func (r Report) String() string {
	limit := ", no limit stored"
	if r.Limit > 0 {
		limit = fmt.Sprintf(", limit %d", r.Limit)
	}
	h, w := r.entries()
	return strings.TrimSuffix(session.FormatStatus("semaphore "+r.Name, r.Revision, limit, h, w), "\n")
}

// Named returns the report as the semaphore named name (without the key
// prefix Status was given) would print it: its name and its holders'
// scopes NAME#i.
func (r Report) Named(name string) Report {
	r.Name = name
	r.Holders = append([]Entry(nil), r.Holders...)
	for i := range r.Holders {
		r.Holders[i].Scope = Scope(name, r.Holders[i].Slot)
	}
	return r
}

// HeldReport is a Held as `coordctl sem` prints it once it holds a slot:
// its JSON form is the stable contract (the lease in hex).
type HeldReport struct {
	Name  string        `json:"name"`
	Limit int           `json:"limit"`
	Slot  int           `json:"slot"`
	Scope string        `json:"scope"`
	Key   string        `json:"key"`
	Token fencing.Token `json:"token"`
	Lease string        `json:"lease"`
}

// Report returns what is printed of h: the semaphore's name (without the
// prefix) and limit, the slot and its fencing scope, key, token and lease.
func (h *Held) Report() HeldReport {
	return HeldReport{Name: h.s.name, Limit: h.s.limit, Slot: h.slot, Scope: h.Scope(), Key: h.Key(),
		Token: h.Token(), Lease: fmt.Sprintf("%x", int64(h.Lease()))}
}

// String is "holding semaphore NAME slot=I scope=S key=K token=T lease=L".
func (r HeldReport) String() string {
	return fmt.Sprintf("holding semaphore %s slot=%d scope=%s key=%s token=%d lease=%s", r.Name, r.Slot, r.Scope, r.Key, r.Token, r.Lease)
}

// ParseLimit reads a limit given as text (coordctl sem set-limit NAME N):
// a whole number of at least 1, else ErrInvalid.
func ParseLimit(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: limit must be a whole number of at least 1, got %q", ErrInvalid, s)
	}
	return n, nil
}

// LimitReport is what `coordctl sem set-limit` prints: the limit stored.
type LimitReport struct {
	Name  string `json:"name"`
	Limit int    `json:"limit"`
}

func (r LimitReport) String() string { return fmt.Sprintf("ok semaphore %s limit=%d", r.Name, r.Limit) }

// DeleteReport is what `coordctl sem delete` prints: whether there was
// anything to delete.
type DeleteReport struct {
	Name    string `json:"name"`
	Deleted bool   `json:"deleted"`
}

func (r DeleteReport) String() string {
	if !r.Deleted {
		return "semaphore " + r.Name + ": nothing to delete"
	}
	return "deleted semaphore " + r.Name
}
