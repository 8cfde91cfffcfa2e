package hold

import (
	"fmt"
	"time"

	"github.com/coordkit/coordkit/session"
)

// Flags are the flags coordctl lock and sem share, as given: how long
// the lease lives, how long to wait, what a lost predecessor costs, how a
// command is stopped.
type Flags struct {
	TTL, Timeout         time.Duration
	Try                  bool
	LockDelay, KillGrace time.Duration
}

// CheckTTLFlag checks --ttl with session's bounds; the error names the flag.
func CheckTTLFlag(ttl time.Duration) error {
	if err := session.CheckTTL(ttl); err != nil {
		return fmt.Errorf("invalid --ttl %s: %v", ttl, err)
	}
	return nil
}

// Validate checks the flags before anything is dialed; every error is a
// flag a user got wrong (a usage error), naming it.
func (h Flags) Validate() error {
	if err := CheckTTLFlag(h.TTL); err != nil {
		return err
	}
	switch {
	case h.Timeout < 0:
		return fmt.Errorf("invalid --timeout %s: must not be negative", h.Timeout)
	case h.Try && h.Timeout > 0:
		return fmt.Errorf("--try and --timeout exclude each other")
	case h.LockDelay < 0:
		return fmt.Errorf("invalid --lock-delay %s: must not be negative", h.LockDelay)
	case h.KillGrace <= 0:
		return fmt.Errorf("invalid --kill-grace %s: must be positive", h.KillGrace)
	}
	return nil
}
