// Package cmdutil is what coordctl's command packages share (cli/cli's
// cmdutil): the Factory and its Printer, the one exit table (ExitCode) and
// the one usage error (UsageError, UsageErrorf), the etcd flags, and the
// small cobra helpers every command uses. Its subpackages: hold (the holds
// of lock, sem, elect and the sidecar: their flags and the one way a hold
// runs) and program (what a binary does around its tree, shared by
// coordctl, internal/cmd/root, and coordkit-sidecar,
// internal/cmd/sidecarroot). It imports no command package; depcheck keeps
// it below them.
package cmdutil
