// Package childproc runs the command that `coordctl lock -- CMD` and
// `coordctl sidecar -- CMD` supervise: in a process group of its own, with
// coordkit's variables set over the inherited environment, so that a signal
// reaches the command and everything it started.
//
// Stop sends SIGTERM to the group and SIGKILL after the grace period, and
// returns only when the command has exited. It does not guarantee that
// processes which left the group (setsid, double fork) are stopped.
package childproc
