package lock

import (
	"errors"
	"fmt"

	"github.com/coordkit/coordkit/fencing"
)

// Errors of the lock package. Match them with errors.Is.
var (
	// ErrLocked is returned by TryLock when another session holds the lock
	// (every *LockedError matches it).
	ErrLocked = errors.New("lock: locked by another session")
	// ErrNotHeld is returned by Unlock on a lock that is no longer held: it
	// was unlocked already, or lost (then the error also wraps ErrLost).
	ErrNotHeld = errors.New("lock: not held")
	// ErrSessionExpired is returned by Lock when the waiter's own key or
	// session vanished while it waited: it never held the lock.
	ErrSessionExpired = errors.New("lock: session expired while waiting")
	// ErrLost is wrapped, together with the reason, by Held.Err and the cause
	// of Held.Context once the lock is lost while held.
	ErrLost = errors.New("lock: lost")
	// ErrKeyGone is the reason of a loss when the holder's key was deleted or
	// replaced behind its back (revoked lease, etcdctl del, a compaction
	// of the holder's lease by an operator).
	ErrKeyGone = errors.New("lock: key deleted or replaced")
	// ErrClosed is returned by Lock and TryLock after Mutex.Close.
	ErrClosed = errors.New("lock: mutex closed")
	// ErrInvalidName is returned by New for an empty name.
	ErrInvalidName = errors.New("lock: invalid name")
	// ErrNotOwner is returned by Held.Txn when its guard (Held.IsOwner)
	// failed: the holder's key is gone or was recreated, so the lock is no
	// longer held and nothing in the transaction was applied.
	ErrNotOwner = errors.New("lock: not owner")
)

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

// lostError builds the error of a lost lock: it matches ErrLost and reason.
func lostError(reason error) error { return fmt.Errorf("%w: %w", ErrLost, reason) }

// errUnlocked is Held.Err and the cause of Held.Context after Unlock.
var errUnlocked = fmt.Errorf("%w: unlocked", ErrNotHeld)
