package session

import (
	"sync"
	"time"
)

// deadline is the pure decision core of a session: it takes observations
// (a keepalive was sent at t and succeeded with the server's TTL) and the
// current time, and says until when the lease can be trusted. It does no I/O
// and is safe for concurrent use.
type deadline struct {
	mu       sync.Mutex
	margin   time.Duration
	deadline time.Time
	lost     bool
}

// newDeadline starts tracking a lease granted by a request sent at sentAt
// with the server's TTL; the first deadline is sentAt + ttl - margin.
func newDeadline(sentAt time.Time, ttl, margin time.Duration) *deadline {
	return &deadline{margin: margin, deadline: sentAt.Add(ttl - margin)}
}

// Renewed records a keepalive that was sent at sentAt and answered, at now,
// with the server's ttl. It extends the deadline to sentAt + ttl - margin,
// unless the deadline had already passed at now: then the lease is lost for
// good and Renewed returns false.
func (d *deadline) Renewed(sentAt time.Time, ttl time.Duration, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lost || !now.Before(d.deadline) {
		d.lost = true
		return false
	}
	if next := sentAt.Add(ttl - d.margin); next.After(d.deadline) {
		d.deadline = next
	}
	return true
}

// Alive reports whether the lease can still be trusted at now. Once it has
// returned false it always does.
func (d *deadline) Alive(now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.lost && !now.Before(d.deadline) {
		d.lost = true
	}
	return !d.lost
}

// MarkLost ends trust in the lease (revoked, not found, closed).
func (d *deadline) MarkLost() {
	d.mu.Lock()
	d.lost = true
	d.mu.Unlock()
}

// Until returns the current local deadline.
func (d *deadline) Until() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.deadline
}
