package semaphore

import (
	"errors"
	"fmt"

	"github.com/coordkit/coordkit/session"
)

// Errors of the semaphore package. The other errors a slot returns are
// those every held key shares (package session: ErrNotHeld, ErrLost,
// ErrKeyGone, ErrNotOwner, ErrGoneWhileWaiting, ErrClosed, ErrInvalidName,
// ErrNameInUse). Match them with errors.Is.
var (
	// ErrNoSlot is returned by TryAcquire when no slot is free or others
	// wait before it.
	ErrNoSlot = errors.New("semaphore: no free slot")
	// ErrLimitMismatch is returned when the limit stored in etcd for the
	// name differs from the Semaphore's.
	ErrLimitMismatch = errors.New("semaphore: limit differs from the stored one")
	// ErrInUse is returned by Delete without force while a slot is held or a
	// waiter queued.
	ErrInUse = errors.New("semaphore: held or waited for")
	// ErrInvalid is returned by New, SetLimit and Delete for a name or a
	// limit that cannot be used (a name's error matches
	// session.ErrInvalidName too).
	ErrInvalid = errors.New("semaphore: invalid name or limit")
)

// noSlot is TryAcquire's error when it cannot take a slot at once: holders
// slot keys when it looked, ahead whether a waiter was ahead of it.
func noSlot(name string, limit, holders int, ahead bool) error {
	switch {
	case ahead:
		return fmt.Errorf("%w: %q has waiters ahead", ErrNoSlot, name)
	}
	return fmt.Errorf("%w: %q has %d holders of %d slots", ErrNoSlot, name, holders, limit)
}

// limitMismatch is the error of a Semaphore whose limit (asked) is not the
// one stored in etcd for its name.
func limitMismatch(name string, stored, asked int) error {
	return fmt.Errorf("%w: %q has limit %d in etcd, this Semaphore has %d", ErrLimitMismatch, name, stored, asked)
}

var errReleased = fmt.Errorf("%w: released", session.ErrNotHeld)

// inUse is Delete's error when the semaphore is in use.
func inUse(name string, holders, waiters int) error {
	return fmt.Errorf("%w: %q has %d slots held and %d waiters", ErrInUse, name, holders, waiters)
}
