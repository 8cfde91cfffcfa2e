// Package root is coordctl's root command: it builds the command tree from
// the command packages under internal/cmd (one per command group, each with
// its NewCmd(f *cmdutil.Factory)) and runs it. Main returns the exit code;
// the code is decided in one place, cmdutil.ExitCode, which reads the error
// a command returns against one table (cmdutil/exit.go): commands return
// meaningful errors and never pick a number, except a child's own status
// passed through (cmdutil.ChildExitError).
//
// Its tests drive the whole CLI in process (run, runInProcess), which only
// this package can, since it alone sees every command; a command package's
// own tests call its unexported functions.
package root
