package lock

import (
	"encoding/json"
	"strings"

	"github.com/coordkit/coordkit/session"
)

// The printed forms of a Report: what `coordctl lock status` prints.

type reportJSON struct {
	Name     string                `json:"name"`
	Revision int64                 `json:"revision"`
	Held     bool                  `json:"held"`
	Holders  []session.StatusEntry `json:"holders"`
	Waiters  []session.StatusEntry `json:"waiters"`
}

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
	return json.Marshal(reportJSON{Name: r.Name, Revision: r.Revision, Held: r.Held(), Holders: h, Waiters: w})
}

// String is the report as text: "lock NAME: held at revision R by H, W
// waiting" (or "free ..."), then a line per holder and waiter.
func (r Report) String() string {
	h, w := r.entries()
	return strings.TrimSuffix(session.FormatStatus("lock "+r.Name, r.Revision, "", h, w), "\n")
}
