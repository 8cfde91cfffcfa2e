// Package childproc runs the command that `coordctl lock -- CMD`, `sem`,
// `elect` and `sidecar -- CMD` supervise: in a process group of its own, with
// coordkit's variables set over the inherited environment, so that a signal
// reaches the command and everything it started. Supervise is the one way a
// command runs under a hold (Hold: a lock, a slot, a leadership): signals
// forwarded (SIGHUP as SIGTERM), the group stopped before the release, and on
// loss SIGKILL no later than the lease's earliest possible expiry on the
// server (KillBy), whatever the kill grace; a loss whose deadline passed
// before the command's exit was seen still counts as a loss.
//
// What is guaranteed: Stop sends SIGTERM (and SIGCONT) to the group and
// SIGKILL after the grace period, and returns only when the command has
// exited and no live process is left in its group — also when the command
// itself had already exited and left background jobs behind. Zombies do not
// count (an init that does not reap may keep them). On Linux the command
// gets SIGKILL from the kernel when the supervising process dies, even by
// SIGKILL (Pdeathsig, tied to an OS thread that Start keeps for the
// command's life).
//
// With Config.Watchdog (coordctl does it on Linux), the command's parent is
// a watchdog process instead (watchdog.go): a child subreaper that holds the
// lease's local deadline, moved forward only by this process after etcd
// acknowledged a keepalive, and stops every descendant — the command's
// group, setsid'd and job-controlled processes — when the deadline passes
// unmoved (this process frozen or starved) or this process dies. Stop then
// returns only when the watchdog has reported the whole tree dead.
//
// What is not: a SIGSTOP of the supervisor and the watchdog together (they
// share a process group), a SIGKILL of the watchdog, a freeze of the whole
// machine. Without a watchdog (elsewhere than Linux, or Config.Watchdog
// empty), processes that leave the group on purpose (setsid, as daemons do)
// are neither signalled nor waited for, and the parent-death signal reaches
// only the direct child: after a SIGKILL of the supervisor, processes the
// command started survive it. Elsewhere than Linux there is no parent-death
// signal at all, and zombies in the group count as alive. Stop waits for as
// long as a process that SIGKILL cannot end (uninterruptible sleep) stays in
// the group; the group is watched by polling, every 20 ms.
package childproc
