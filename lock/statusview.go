package lock

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// The printed forms of a Report: what `coordctl lock status` prints.

func (r Report) entries() (holders, waiters []session.StatusEntry) {
	holders, waiters = []session.StatusEntry{}, []session.StatusEntry{}
	for _, e := range r.Holders {
		se := session.NewStatusEntry(e.Key, e.Token, e.Lease).WithTTL(e.TTL)
		se.Mode = string(e.Mode)
		holders = append(holders, se)
	}
	for _, e := range r.Waiters {
		se := session.NewStatusEntry(e.Key, e.Token, e.Lease)
		se.Mode = string(e.Mode)
		waiters = append(waiters, se)
	}
	return holders, waiters
}

// MarshalJSON writes {"name","revision","held","holders":[{"key","token",
// "lease","mode","ttl_s"}],"waiters":[...]}: the lease in hex, ttl_s in
// seconds (-1: the lease was gone), waiters without ttl_s.
func (r Report) MarshalJSON() ([]byte, error) {
	h, w := r.entries()
	return json.Marshal(session.StatusReport{Name: r.Name, Revision: r.Revision, Held: r.Held(), Holders: h, Waiters: w})
}

// String is the report as text: "lock NAME: held at revision R by H, W
// waiting" (or "free ..."), then a line per holder and waiter.
func (r Report) String() string {
	h, w := r.entries()
	return strings.TrimSuffix(session.FormatStatus("lock "+r.Name, r.Revision, "", h, w), "\n")
}

// HeldReport is a Held as `coordctl lock` prints it once it holds the
// lock: its JSON form is the stable contract (the lease in hex, "shared"
// only for a reader).
type HeldReport struct {
	Name   string        `json:"name"`
	Key    string        `json:"key"`
	Token  fencing.Token `json:"token"`
	Lease  string        `json:"lease"`
	Shared bool          `json:"shared,omitempty"`
}

// Report returns what is printed of h: the lock's name (without the
// prefix), key, token, lease and mode.
func (h *Held) Report() HeldReport {
	return HeldReport{Name: h.m.name, Key: h.Key(), Token: h.Token(), Lease: fmt.Sprintf("%x", int64(h.Lease())), Shared: h.Shared()}
}

// String is "holding lock NAME key=K token=T lease=L" ("read lock" when shared).
func (r HeldReport) String() string {
	what := "lock"
	if r.Shared {
		what = "read lock"
	}
	return fmt.Sprintf("holding %s %s key=%s token=%d lease=%s", what, r.Name, r.Key, r.Token, r.Lease)
}
