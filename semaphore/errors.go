package semaphore

import (
	"errors"
	"fmt"

	"github.com/coordkit/coordkit/session"
)

// Errors of the semaphore package. Match them with errors.Is. The errors a
// slot shares with locks, elections and claims are session's (a slot is a
// session.HeldKey); the names here are the same values.
var (
	// ErrNoSlot is returned by TryAcquire when no slot is free or others
	// wait before it (every *NoSlotError matches it).
	ErrNoSlot = errors.New("semaphore: no free slot")
	// ErrLimitMismatch is returned when the limit stored in etcd for the
	// name differs from the Semaphore's (every *LimitError matches it).
	ErrLimitMismatch = errors.New("semaphore: limit differs from the stored one")
	// ErrInUse is returned by Delete without force while a slot is held or a
	// waiter queued (every *InUseError matches it).
	ErrInUse = errors.New("semaphore: held or waited for")
	// ErrInvalid is returned by New for an empty name or a limit below 1 (an
	// empty name's error matches ErrInvalidName too).
	ErrInvalid = errors.New("semaphore: invalid name or limit")

	// ErrNotHeld is returned by Release on a slot that is no longer held:
	// released already, or lost (then the error also wraps ErrLost). It is
	// session.ErrNotHeld.
	ErrNotHeld = session.ErrNotHeld
	// ErrSessionExpired is returned by Acquire when the waiter's own key or
	// session vanished while it waited: it never held a slot. It is
	// session.ErrGoneWhileWaiting.
	ErrSessionExpired = session.ErrGoneWhileWaiting
	// ErrLost is wrapped, with the reason, by Held.Err and the cause of
	// Held.Context once the slot is lost while held. It is session.ErrLost.
	ErrLost = session.ErrLost
	// ErrKeyGone is the reason of a loss when the slot key was deleted or
	// replaced behind the holder's back. It is session.ErrKeyGone.
	ErrKeyGone = session.ErrKeyGone
	// ErrClosed is returned by Acquire and TryAcquire after Close. It is
	// session.ErrClosed.
	ErrClosed = session.ErrClosed
	// ErrInvalidName is session.ErrInvalidName, for an empty name.
	ErrInvalidName = session.ErrInvalidName
	// ErrNotOwner is returned by Held.Txn when its guard (Held.IsOwner)
	// failed. It is session.ErrNotOwner.
	ErrNotOwner = session.ErrNotOwner
)

// NoSlotError is what TryAcquire returns when it cannot take a slot at once.
type NoSlotError struct {
	Name    string
	Limit   int
	Holders int // slot keys when it looked; -1: this Semaphore holds a slot already
	Ahead   int // 1 if a waiter was ahead of it (it reads only the last one)
}

func (e *NoSlotError) Error() string {
	if e.Holders < 0 {
		return fmt.Sprintf("semaphore: this Semaphore holds a slot of %q already", e.Name)
	}
	if e.Ahead > 0 {
		return fmt.Sprintf("semaphore: %q has waiters ahead", e.Name)
	}
	return fmt.Sprintf("semaphore: %q has %d holders of %d slots", e.Name, e.Holders, e.Limit)
}

// Is makes errors.Is(err, ErrNoSlot) true.
func (e *NoSlotError) Is(target error) bool { return target == ErrNoSlot }

// LimitError says that the name's stored limit is not the Semaphore's.
type LimitError struct {
	Name          string
	Stored, Asked int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("semaphore: %q has limit %d in etcd, this Semaphore has %d", e.Name, e.Stored, e.Asked)
}

// Is makes errors.Is(err, ErrLimitMismatch) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimitMismatch }

var errReleased = fmt.Errorf("%w: released", ErrNotHeld)

// InUseError is what Delete returns when the semaphore is in use.
type InUseError struct {
	Name             string
	Holders, Waiters int
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("semaphore: %q has %d slots held and %d waiters", e.Name, e.Holders, e.Waiters)
}

// Is makes errors.Is(err, ErrInUse) true.
func (e *InUseError) Is(target error) bool { return target == ErrInUse }
