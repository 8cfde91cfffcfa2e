package session

import "time"

// DefaultMargin is the margin a session with a TTL of ttl uses when
// WithMargin is not given: a tenth of the TTL, at least 200ms. The local
// deadline comes this long before the server can expire the lease.
func DefaultMargin(ttl time.Duration) time.Duration { return max(ttl/10, 200*time.Millisecond) }

// Margin returns how long before the earliest possible server-side expiry
// the session declares loss (WithMargin, or DefaultMargin of the TTL).
func (s *Session) Margin() time.Duration { return s.cfg.margin }

// EarliestExpiry returns the earliest instant at which the server can expire
// the lease unless it is revoked first: the send time of the last
// acknowledged keepalive (or of the grant) plus the TTL the server answered,
// which is Deadline plus Margin. The server measures the TTL from when it
// received that request, which is later, so no holder on another lease can
// be granted what this lease holds before this instant — unless the lease is
// revoked, or the key deleted, which can happen at any time. Once the session
// has expired (ErrExpired) the instant no longer moves.
func (s *Session) EarliestExpiry() time.Time { return s.Deadline().Add(s.cfg.margin) }
