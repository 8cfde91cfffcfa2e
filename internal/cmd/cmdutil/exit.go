package cmdutil

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
	ExitOK          = 0
	ExitError       = 1
	ExitUsage       = 2
	ExitNotAcquired = 3
	ExitLost        = 4
	ExitStale       = 5
	// ExitUnknown: the writes may have been committed although the command
	// could not confirm it (a lost answer to COMMIT, statements that ran
	// outside the fence): look before retrying.
	ExitUnknown = 6
	// ExitCannotExecute and ExitCommandNotFound are the shell's codes for a
	// command that was found but could not be run, and one not found.
	ExitCannotExecute   = 126
	ExitCommandNotFound = 127
)

// What a command's error means to coordctl's caller. A command returns a
// library error the exit table knows (lock.ErrLocked, fencing.ErrStale) or
// marks its error with one of these; it never picks a number.
var (
	// ErrNotAcquired: the lock or name is someone else's, or was not
	// acquired in time (exit 3).
	ErrNotAcquired = errors.New("not acquired")
	// ErrLost: held, then lost while holding (exit 4).
	ErrLost = errors.New("lost while holding")
	// ErrUnknown: the outcome is not known to be "nothing happened" (exit 6).
	ErrUnknown = errors.New("outcome unknown")
	// ErrFailed: the command ran and its result is a failure (exit 1), even
	// if the cause says "interrupted".
	ErrFailed = errors.New("failed")
)

// exitCodes is the one table from a command's error to coordctl's exit
// code, read in order by ExitCode; an error no row matches exits 1. The
// pass-through of a child's own status (ChildExitError) comes before it.
var exitCodes = []struct {
	match func(error) bool
	code  int
}{
	{childStartFailed(true), ExitCommandNotFound},
	{childStartFailed(false), ExitCannotExecute},
	{isAny(ErrNotAcquired, lock.ErrLocked), ExitNotAcquired},
	{isAny(ErrLost), ExitLost},
	{isAny(fencing.ErrStale), ExitStale},
	{isAny(ErrUnknown, sqlfence.ErrCommitUnknown, sqlfence.ErrOutsideFence), ExitUnknown},
	{isAny(ErrFailed), ExitError},
	{isAny(session.ErrBadTTL, primitive.ErrInvalid, session.ErrInvalidName), ExitUsage}, // a name, --ttl, --limit or --lock-delay the library refuses
	{func(err error) bool { var ue *UsageError; return errors.As(err, &ue) }, ExitUsage},
	{isAny(context.Canceled), ExitOK}, // interrupted (SIGINT) while waiting for nothing
}

// ExitCode maps an error returned by a command to coordctl's exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ce *ChildExitError
	if errors.As(err, &ce) {
		return ce.Code
	}
	for _, row := range exitCodes {
		if row.match(err) {
			return row.code
		}
	}
	return ExitError
}

// Silent reports whether Main should print nothing about err: the command
// already told the user (in its output, or a child's status passed through).
func Silent(err error) bool {
	var ce *ChildExitError
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

// Mark wraps err so that it also matches kind (ErrNotAcquired, ErrLost,
// ErrUnknown, ErrFailed), keeping err's text.
func Mark(kind, err error) error { return &markedError{kind: kind, err: err} }

type markedError struct{ kind, err error }

func (e *markedError) Error() string   { return e.err.Error() }
func (e *markedError) Unwrap() []error { return []error{e.err, e.kind} }

// Reported wraps err, whose exit code the table decides, as already told to
// the user: Main prints nothing more.
func Reported(err error) error { return &reportedError{err: err} }

type reportedError struct{ err error }

func (e *reportedError) Error() string { return e.err.Error() }
func (e *reportedError) Unwrap() error { return e.err }

// ChildExitError passes the status of a command coordctl ran (lock and
// sidecar exec modes) through as coordctl's own; the command reported
// whatever it had to say.
type ChildExitError struct{ Code int }

func (e *ChildExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// ChildStartError is a command coordctl could not start: 127 when it was not
// found, 126 when it was found but could not be executed (as a shell says).
type ChildStartError struct{ Err error }

func (e *ChildStartError) Error() string { return e.Err.Error() }
func (e *ChildStartError) Unwrap() error { return e.Err }

func childStartFailed(notFound bool) func(error) bool {
	return func(err error) bool {
		var se *ChildStartError
		if !errors.As(err, &se) {
			return false
		}
		return notFound == (errors.Is(se.Err, exec.ErrNotFound) || errors.Is(se.Err, os.ErrNotExist))
	}
}

// UsageErrorf reports a bad flag or argument: exit 2 with the usage.
func UsageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// UsageError is the one usage error of coordctl's commands: a bad flag,
// argument or name, exit 2 with the usage line.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }
