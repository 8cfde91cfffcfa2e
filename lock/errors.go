package lock

import (
	"errors"
	"fmt"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// ErrLocked is returned by TryLock when another session holds the lock
// (every *LockedError matches it). The other errors a lock returns are
// those every held key shares (package session: ErrNotHeld, ErrLost,
// ErrKeyGone, ErrNotOwner, ErrGoneWhileWaiting, ErrClosed, ErrInvalidName,
// ErrNameInUse). Match them with errors.Is.
var ErrLocked = errors.New("lock: locked by another session")

// LockedError is what TryLock returns when the lock is held elsewhere: who
// holds it. It matches ErrLocked.
type LockedError struct {
	Name        string
	HolderKey   string
	HolderToken fencing.Token
}

func (e *LockedError) Error() string {
	if e.HolderKey == "" {
		return fmt.Sprintf("lock: %q is locked by another holder of this mutex", e.Name)
	}
	return fmt.Sprintf("lock: %q is held by key %s (token %d)", e.Name, e.HolderKey, e.HolderToken)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// errUnlocked is Held.Err and the cause of Held.Context after Unlock.
var errUnlocked = fmt.Errorf("%w: unlocked", session.ErrNotHeld)
