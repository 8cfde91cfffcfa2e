package labcmd

import (
	"errors"
	"fmt"
)

// Errors of Parse. Match them with errors.Is; every error Parse returns is
// also a *ParseError (match with errors.As).
//
// Unlike the rest of coordkit's sentinels these carry no "labcmd:" prefix:
// their text is what the lab shell has always shown its user ("usage: cut N
// M", `unknown command "frob" (try help)`).
var (
	// ErrUnknownCommand: the first word of the line names no command.
	ErrUnknownCommand = errors.New("unknown command")
	// ErrUsage: the command exists but its arguments do not fit: wrong
	// count, unknown flag, a number, duration or node name that does not
	// parse, an unterminated quote.
	ErrUsage = errors.New("usage")
)

// Errors of Exec and NewSession, beside the cluster's own.
var (
	// ErrNoLeader: a command named the node "leader" while no node leads.
	ErrNoLeader = errors.New("no leader now")
	// ErrNoPausedNode: a command named the node "paused" while none is.
	ErrNoPausedNode = errors.New("no node is paused")
	// ErrNilCluster is returned by NewSession without a cluster.
	ErrNilCluster = errors.New("labcmd: nil cluster")
)

// ParseError is a line that is not a valid command. Cmd is the command's
// name as typed ("" if the line could not be split into words); Err wraps
// ErrUnknownCommand, ErrUsage or cluster.ErrBadMode.
type ParseError struct {
	Cmd string
	Err error
}

func (e *ParseError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *ParseError) Unwrap() error { return e.Err }

func usagef(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUsage}, args...)...)
}
