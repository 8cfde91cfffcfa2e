package cli

import (
	"context"
	"errors"
	"fmt"
)

// Exit codes of coordctl (DESIGN.md, "coordctl conventions").
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitNotAcquired = 3
	exitLost        = 4
	exitStale       = 5
)

// exitError carries the exit code a command wants; Main prints Err (if any)
// and exits with Code.
type codedError struct {
	Code int
	Err  error
}

func (e *codedError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *codedError) Unwrap() error { return e.Err }

// withCode wraps err so that coordctl exits with code.
func withCode(code int, err error) error { return &codedError{Code: code, Err: err} }

// usageErrorf reports a bad flag or argument: exit 2 with the usage.
func usageErrorf(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// silentExit ends the command with code without printing anything more: the
// command already reported (a child's exit code passed through, say).
func silentExit(code int) error { return &codedError{Code: code} }

// exitCode maps an error returned by a command to coordctl's exit code.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.Code
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	if errors.Is(err, context.Canceled) {
		return exitOK
	}
	return exitError
}
