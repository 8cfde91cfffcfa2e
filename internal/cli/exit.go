package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/session"
)

// Exit codes of coordctl (DESIGN.md, "coordctl conventions").
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitNotAcquired = 3
	exitLost        = 4
	exitStale       = 5
	// exitUnknown: the writes may have been committed although the command
	// could not confirm it (a lost answer to COMMIT, statements that ran
	// outside the fence): look before retrying.
	exitUnknown = 6
	// exitCannotExecute and exitCommandNotFound are the shell's codes for a
	// command that was found but could not be run, and one not found.
	exitCannotExecute   = 126
	exitCommandNotFound = 127
)

// What a command's error means to coordctl's caller. A command returns a
// library error the exit table knows (lock.ErrLocked, fencing.ErrStale) or
// marks its error with one of these; it never picks a number.
var (
	// errNotAcquired: the lock or name is someone else's, or was not
	// acquired in time (exit 3).
	errNotAcquired = errors.New("not acquired")
	// errLost: held, then lost while holding (exit 4).
	errLost = errors.New("lost while holding")
	// errUnknown: the outcome is not known to be "nothing happened" (exit 6).
	errUnknown = errors.New("outcome unknown")
	// errFailed: the command ran and its result is a failure (exit 1), even
	// if the cause says "interrupted".
	errFailed = errors.New("failed")
)

// exitCodes is the one table from a command's error to coordctl's exit
// code, read in order by exitCode; an error no row matches exits 1. The
// pass-through of a child's own status (childExitError) comes before it.
var exitCodes = []struct {
	match func(error) bool
	code  int
}{
	{childStartFailed(true), exitCommandNotFound},
	{childStartFailed(false), exitCannotExecute},
	{isAny(errNotAcquired, lock.ErrLocked), exitNotAcquired},
	{isAny(errLost), exitLost},
	{isAny(fencing.ErrStale), exitStale},
	{isAny(errUnknown, sqlfence.ErrCommitUnknown, sqlfence.ErrOutsideFence), exitUnknown},
	{isAny(errFailed), exitError},
	{isAny(session.ErrBadTTL, primitive.ErrInvalid, session.ErrInvalidName), exitUsage}, // a name, --ttl, --limit or --lock-delay the library refuses
	{func(err error) bool { var ue *usageError; return errors.As(err, &ue) }, exitUsage},
	{isAny(context.Canceled), exitOK}, // interrupted (SIGINT) while waiting for nothing
}

// exitCode maps an error returned by a command to coordctl's exit code.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ce *childExitError
	if errors.As(err, &ce) {
		return ce.code
	}
	for _, row := range exitCodes {
		if row.match(err) {
			return row.code
		}
	}
	return exitError
}

// silent reports whether Main should print nothing about err: the command
// already told the user (in its output, or a child's status passed through).
func silent(err error) bool {
	var ce *childExitError
	var re *reportedError
	return errors.As(err, &ce) || errors.As(err, &re)
}

func isAny(targets ...error) func(error) bool {
	return func(err error) bool {
		for _, t := range targets {
			if errors.Is(err, t) {
				return true
			}
		}
		return false
	}
}

// mark wraps err so that it also matches kind (errNotAcquired, errLost,
// errUnknown, errFailed), keeping err's text.
func mark(kind, err error) error { return &markedError{kind: kind, err: err} }

type markedError struct{ kind, err error }

func (e *markedError) Error() string   { return e.err.Error() }
func (e *markedError) Unwrap() []error { return []error{e.err, e.kind} }

// reported wraps err, whose exit code the table decides, as already told to
// the user: Main prints nothing more.
func reported(err error) error { return &reportedError{err: err} }

type reportedError struct{ err error }

func (e *reportedError) Error() string { return e.err.Error() }
func (e *reportedError) Unwrap() error { return e.err }

// childExitError passes the status of a command coordctl ran (lock and
// sidecar exec modes) through as coordctl's own; the command reported
// whatever it had to say.
type childExitError struct{ code int }

func (e *childExitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// childStartError is a command coordctl could not start: 127 when it was not
// found, 126 when it was found but could not be executed (as a shell says).
type childStartError struct{ err error }

func (e *childStartError) Error() string { return e.err.Error() }
func (e *childStartError) Unwrap() error { return e.err }

func childStartFailed(notFound bool) func(error) bool {
	return func(err error) bool {
		var se *childStartError
		if !errors.As(err, &se) {
			return false
		}
		return notFound == (errors.Is(se.err, exec.ErrNotFound) || errors.Is(se.err, os.ErrNotExist))
	}
}

// usageErrorf reports a bad flag or argument: exit 2 with the usage.
func usageErrorf(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }
