package fencing

import (
	"errors"
	"fmt"
)

// Errors of the fencing package. Match them with errors.Is.
var (
	// ErrStale is matched by every *StaleError: the token is below the floor.
	ErrStale = errors.New("fencing: stale token")
	// ErrInvalidToken is wrapped by ParseToken's errors and returned for a zero token.
	ErrInvalidToken = errors.New("fencing: invalid token")
	// ErrInvalidScope is returned for an empty or over-long scope.
	ErrInvalidScope = errors.New("fencing: invalid scope")
	// ErrCorrupt is returned when a log holds a damaged record that is not a torn final write.
	ErrCorrupt = errors.New("fencing: corrupt log")
	// ErrClosed is returned by a DurableGuard or Resource after Close, and after a failed fsync.
	ErrClosed = errors.New("fencing: closed")
	// ErrDirInUse is returned when another process holds the data directory or
	// log (not to be confused with lock.ErrLocked, a lock held by another holder).
	ErrDirInUse = errors.New("fencing: data dir in use by another process")
	// ErrNotFound is returned by Client.Get for a key that was never written (HTTP 404).
	ErrNotFound = errors.New("fencing: key not found")
	// ErrVersionMismatch is returned for a failed If-Match precondition (HTTP 412).
	ErrVersionMismatch = errors.New("fencing: version mismatch")
	// ErrIdempotencyConflict is returned when an Idempotency-Key is reused for a different request (HTTP 422).
	ErrIdempotencyConflict = errors.New("fencing: idempotency key reused with a different request")
	// ErrTooLarge is returned for a value over MaxValueSize (HTTP 413).
	ErrTooLarge = errors.New("fencing: value too large")
	// ErrBadRequest is returned when the server rejects a malformed request (HTTP 400).
	ErrBadRequest = errors.New("fencing: bad request")
)

// StaleError reports a token below the floor of its scope. It matches
// ErrStale with errors.Is; use errors.As to read the fields.
type StaleError struct {
	Scope string
	Token Token
	Floor Token
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("fencing: stale token %d for scope %q: floor is %d", e.Token, e.Scope, e.Floor)
}

// Is makes errors.Is(err, ErrStale) true for every *StaleError.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// MaxScopeLen is the longest scope, in bytes, the Guard accepts.
const MaxScopeLen = 512

// ValidateScope checks that a scope is usable: non-empty, at most
// MaxScopeLen bytes, no control characters. Its errors wrap ErrInvalidScope.
func ValidateScope(scope string) error {
	if scope == "" {
		return fmt.Errorf("%w: empty", ErrInvalidScope)
	}
	if len(scope) > MaxScopeLen {
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidScope, MaxScopeLen)
	}
	for _, r := range scope {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w %q: control character", ErrInvalidScope, scope)
		}
	}
	return nil
}
