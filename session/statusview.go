package session

import (
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
)

// StatusEntry is one holder or waiter of a lock or semaphore as their
// reports print themselves (lock.Report, semaphore.Report: their JSON form
// is what `coordctl lock status` and `coordctl sem status` print, a stable
// contract). The lease is in hex, as etcdctl prints lease IDs.
type StatusEntry struct {
	Key   string        `json:"key"`
	Token fencing.Token `json:"token"`
	Lease string        `json:"lease"`
	Mode  string        `json:"mode,omitempty"`
	Slot  *int          `json:"slot,omitempty"`
	Scope string        `json:"scope,omitempty"`
	// TTL is what a holder's lease has left on the server in seconds, -1
	// when it was gone; nil for a waiter.
	TTL *int64 `json:"ttl_s,omitempty"`
}

// StatusReport is the JSON form of a lock's or a semaphore's status
// (lock.Report, semaphore.Report): {"name","revision","limit"?,"held",
// "holders":[...],"waiters":[...]}; Limit is a semaphore's, nil for a lock.
type StatusReport struct {
	Name     string        `json:"name"`
	Revision int64         `json:"revision"`
	Limit    *int          `json:"limit,omitempty"`
	Held     bool          `json:"held"`
	Holders  []StatusEntry `json:"holders"`
	Waiters  []StatusEntry `json:"waiters"`
}

// NewStatusEntry is the entry of a key, without mode, slot or TTL.
func NewStatusEntry(key string, token fencing.Token, lease clientv3.LeaseID) StatusEntry {
	return StatusEntry{Key: key, Token: token, Lease: fmt.Sprintf("%x", int64(lease))}
}

// WithTTL sets the entry's TTL from what LeaseTTL said (negative: gone).
func (e StatusEntry) WithTTL(d time.Duration) StatusEntry {
	s := int64(d / time.Second)
	if d < 0 {
		s = -1
	}
	e.TTL = &s
	return e
}

// FormatStatus is the text form of a lock's or a semaphore's status: a
// line "WHAT: held at revision R EXTRA by H, W waiting" (or "free at
// ..."), then one line per holder and waiter.
func FormatStatus(what string, rev int64, extra string, holders, waiters []StatusEntry) string {
	var b strings.Builder
	if len(holders) == 0 {
		fmt.Fprintf(&b, "%s: free at revision %d%s, %d waiting\n", what, rev, extra, len(waiters))
	} else {
		fmt.Fprintf(&b, "%s: held at revision %d%s by %d, %d waiting\n", what, rev, extra, len(holders), len(waiters))
	}
	line := func(role string, e StatusEntry) {
		fmt.Fprintf(&b, "  %-6s", role)
		if e.Mode != "" {
			fmt.Fprintf(&b, " %-9s", e.Mode)
		}
		if e.Scope != "" {
			fmt.Fprintf(&b, " scope=%s", e.Scope)
		}
		fmt.Fprintf(&b, " token=%d lease=%s", e.Token, e.Lease)
		if e.TTL != nil {
			if *e.TTL < 0 {
				b.WriteString(" ttl=gone")
			} else {
				fmt.Fprintf(&b, " ttl=%ds", *e.TTL)
			}
		}
		fmt.Fprintf(&b, " key=%s\n", e.Key)
	}
	for _, e := range holders {
		line("holder", e)
	}
	for _, e := range waiters {
		line("waiter", e)
	}
	return b.String()
}
