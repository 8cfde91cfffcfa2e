// Package cmdutil is what coordctl's command packages share (cli/cli's
// cmdutil): the Factory and its Printer, the one exit table (ExitCode) and
// the one usage error (UsageError, UsageErrorf), the etcd flags, and the
// small cobra helpers every command uses; and what a binary does around
// its tree (SetUpRoot, RejectUnknownSubcommands, Execute, Main), shared by
// coordctl (internal/cmd/root) and coordkit-sidecar
// (internal/cmd/sidecarroot). The holds of lock, sem and elect
// (their flags and the one way a hold runs) are its subpackage hold. It
// imports no command package; depcheck keeps it below them.
package cmdutil
