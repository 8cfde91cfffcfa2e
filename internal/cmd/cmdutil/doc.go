// Package cmdutil is what coordctl's command packages share (cli/cli's
// cmdutil): the Factory and its Printer, the one exit table (ExitCode) and
// the one usage error (UsageError, UsageErrorf), the etcd and hold flags and
// the one way a hold runs (RunHeld), and the small cobra helpers every
// command uses. It imports no command package; depcheck keeps it below them.
package cmdutil
