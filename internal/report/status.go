package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/primitive"
)

// statusEntry is one holder or waiter of a lock or semaphore as the status
// commands print it. The lease is in hex, as etcdctl prints lease IDs.
type statusEntry struct {
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

// statusJSON is the JSON form of a lock's or a semaphore's status:
// {"name","revision","limit"?,"held","holders":[...],"waiters":[...]};
// Limit is a semaphore's, nil for a lock.
type statusJSON struct {
	Name     string        `json:"name"`
	Revision int64         `json:"revision"`
	Limit    *int          `json:"limit,omitempty"`
	Held     bool          `json:"held"`
	Holders  []statusEntry `json:"holders"`
	Waiters  []statusEntry `json:"waiters"`
}

// entryOf is the printed form of e; withTTL for a holder.
func entryOf(e primitive.Entry, withTTL bool) statusEntry {
	out := statusEntry{Key: e.Key, Token: e.Token, Lease: fmt.Sprintf("%x", int64(e.Lease))}
	if withTTL {
		s := int64(e.TTL / time.Second)
		if e.TTL < 0 {
			s = -1
		}
		out.TTL = &s
	}
	return out
}

// formatStatus is the text form of a lock's or a semaphore's status: a
// line "WHAT: held at revision R EXTRA by H, W waiting" (or "free at
// ..."), then one line per holder and waiter.
func formatStatus(what string, rev int64, extra string, holders, waiters []statusEntry) string {
	var b strings.Builder
	if len(holders) == 0 {
		fmt.Fprintf(&b, "%s: free at revision %d%s, %d waiting\n", what, rev, extra, len(waiters))
	} else {
		fmt.Fprintf(&b, "%s: held at revision %d%s by %d, %d waiting\n", what, rev, extra, len(holders), len(waiters))
	}
	line := func(role string, e statusEntry) {
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
