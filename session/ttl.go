package session

import (
	"fmt"
	"time"
)

// MinTTL and MaxTTL bound a lease TTL: below a second the local deadline
// leaves no time to renew; above MaxTTL etcd refuses the grant ("too large
// lease TTL", lease.MaxLeaseTTL seconds, about 285 years).
const (
	MinTTL = time.Second
	MaxTTL = 9_000_000_000 * time.Second
)

// CheckTTL reports whether ttl can be a lease TTL: ErrBadTTL below MinTTL,
// ErrTTLTooLong above MaxTTL (both wrapped with the value). Every
// constructor that grants a lease checks it; a CLI checks its --ttl with it
// before it dials, and maps both errors to a usage error.
func CheckTTL(ttl time.Duration) error {
	switch {
	case ttl < MinTTL:
		return fmt.Errorf("%w (got %s)", ErrBadTTL, ttl)
	case ttl > MaxTTL:
		return fmt.Errorf("%w (got %s, the maximum is %d s, about %d years)", ErrTTLTooLong, ttl,
			int64(MaxTTL/time.Second), int64(MaxTTL/time.Second)/(365*24*3600))
	}
	return nil
}
