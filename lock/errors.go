package lock

import (
	"errors"
	"fmt"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// Errors of the lock package. Match them with errors.Is. The errors a lock
// shares with semaphores, elections and claims are session's (a lock is a
// session.HeldKey); the names here are the same values, kept so that code
// written against them goes on working.
var (
	// ErrLocked is returned by TryLock when another session holds the lock
	// (every *LockedError matches it).
	ErrLocked = errors.New("lock: locked by another session")
	// ErrNotHeld is returned by Unlock on a lock that is no longer held: it
	// was unlocked already, or lost (then the error also wraps ErrLost).
	// It is session.ErrNotHeld.
	ErrNotHeld = session.ErrNotHeld
	// ErrSessionExpired is returned by Lock when the waiter's own key or
	// session vanished while it waited: it never held the lock. It is
	// session.ErrGoneWhileWaiting.
	ErrSessionExpired = session.ErrGoneWhileWaiting
	// ErrLost is wrapped, together with the reason, by Held.Err and the cause
	// of Held.Context once the lock is lost while held. It is session.ErrLost.
	ErrLost = session.ErrLost
	// ErrKeyGone is the reason of a loss when the holder's key was deleted or
	// replaced behind its back (revoked lease, etcdctl del). It is
	// session.ErrKeyGone.
	ErrKeyGone = session.ErrKeyGone
	// ErrClosed is returned by Lock and TryLock after Mutex.Close. It is
	// session.ErrClosed, also the reason of a lock lost to that Close.
	ErrClosed = session.ErrClosed
	// ErrInvalidName is returned by New for a name session.ValidateName
	// refuses. It is session.ErrInvalidName.
	ErrInvalidName = session.ErrInvalidName
	// ErrNotOwner is returned by Held.Txn when its guard (Held.IsOwner)
	// failed: the holder's key is gone or was recreated, so the lock is no
	// longer held and nothing in the transaction was applied. It is
	// session.ErrNotOwner.
	ErrNotOwner = session.ErrNotOwner
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

// errUnlocked is Held.Err and the cause of Held.Context after Unlock.
var errUnlocked = fmt.Errorf("%w: unlocked", ErrNotHeld)
