package session

import (
	"fmt"
	"time"
)

// MinTTL and MaxTTL bound a lease TTL: below a second the local deadline
// leaves no time to renew; above MaxTTL etcd refuses the grant ("too large
// lease TTL", lease.MaxLeaseTTL seconds, about 285 years).
const (
	MinTTL = 1 * time.Second
	MaxTTL = 9_000_000_000 * time.Second
)

// CheckTTL reports whether ttl can be a lease TTL: an error wrapping
// ErrBadTTL below MinTTL or above MaxTTL, naming the bound and the value. New checks it,
// and so does the configuration of lock, semaphore and election before
// anything is dialled.
func CheckTTL(ttl time.Duration) error {
	switch {
	case ttl < MinTTL:
		return fmt.Errorf("%w: must be at least 1s (got %s)", ErrBadTTL, ttl)
	case ttl > MaxTTL:
		return fmt.Errorf("%w: longer than etcd's maximum lease TTL (got %s, the maximum is %d s, about %d years)", ErrBadTTL, ttl,
			int64(MaxTTL/time.Second), int64(MaxTTL/time.Second)/(365*24*3600))
	}
	return nil
}
