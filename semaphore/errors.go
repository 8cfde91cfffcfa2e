package semaphore

import (
	"errors"
	"fmt"
)

// Errors of the semaphore package. Match them with errors.Is.
var (
	// ErrNoSlot is returned by TryAcquire when no slot is free or others
	// wait before it (every *NoSlotError matches it).
	ErrNoSlot = errors.New("semaphore: no free slot")
	// ErrLimitMismatch is returned when the limit stored in etcd for the
	// name differs from the Semaphore's (every *LimitError matches it).
	ErrLimitMismatch = errors.New("semaphore: limit differs from the stored one")
	// ErrNotHeld is returned by Release on a slot that is no longer held:
	// released already, or lost (then the error also wraps ErrLost).
	ErrNotHeld = errors.New("semaphore: not held")
	// ErrSessionExpired is returned by Acquire when the waiter's own key or
	// session vanished while it waited: it never held a slot.
	ErrSessionExpired = errors.New("semaphore: session expired while waiting")
	// ErrLost is wrapped, with the reason, by Held.Err and the cause of
	// Held.Context once the slot is lost while held.
	ErrLost = errors.New("semaphore: lost")
	// ErrKeyGone is the reason of a loss when the slot key was deleted or
	// replaced behind the holder's back.
	ErrKeyGone = errors.New("semaphore: slot key deleted or replaced")
	// ErrClosed is returned by Acquire and TryAcquire after Close.
	ErrClosed = errors.New("semaphore: closed")
	// ErrInvalid is returned by New for an empty name or a limit below 1.
	ErrInvalid = errors.New("semaphore: invalid name or limit")
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
	return fmt.Sprintf("semaphore: %q has limit %d in etcd, this Semaphore has %d (SetLimit changes it)", e.Name, e.Stored, e.Asked)
}

// Is makes errors.Is(err, ErrLimitMismatch) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimitMismatch }

func lostError(reason error) error { return fmt.Errorf("%w: %w", ErrLost, reason) }

var errReleased = fmt.Errorf("%w: released", ErrNotHeld)
