package lockcmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/childproc"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil/hold"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/internal/report"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/session"
)

type lockOptions struct {
	hold.Options
	Read bool
}

// NewCmd returns the command coordctl lock.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &lockOptions{}
	var nameFlag string
	cmd := &cobra.Command{
		Use:   "lock NAME [--read] [--ttl D] [--timeout D | --try] [--lock-delay D] [--kill-grace D] [--prefix P] [-- COMMAND [ARGS...]]",
		Short: "Hold a fenced lock (exclusive or --read), alone or while a command runs",
		Long: `Acquire the lock NAME on etcd and hold it. Waiters are served in order (FIFO).
The fencing token is the create revision of the holder's key; it grows from
holder to holder, so a protected resource can refuse a holder that lost the
lock without knowing it (see 'coordctl resource').

Keys are laid out as etcd's concurrency.Mutex lays them out (NAME/<lease hex>),
so 'coordctl lock' and 'etcdctl lock' on the same name exclude each other.

--read takes the lock in shared mode: readers hold it together, a writer
(coordctl lock NAME without --read, etcdctl lock, concurrency.Mutex) holds it
alone. Readers' keys are NAME/read/<lease hex>, as etcd's recipes.RWMutex lays
them out. Arrival order is kept: a waiting writer holds back the readers that
came after it. Readers' tokens are not ordered against each other: fence
writes by writers' tokens.

--lock-delay D: if the holder ahead of this waiter is lost (its lease expired
or was revoked: crashed, frozen, cut off) rather than released, take the lock
no earlier than D after its key went. A clean release costs nothing. It is a
second line of defence behind the token, for side effects no resource checks.

Without a command, coordctl prints the holder once it has the lock:
  holding lock NAME scope=S key=K token=T lease=L      (--read: holding read lock ...)
  (-w json: {"name":NAME,"scope":S,"key":K,"token":T,"lease":"L"}, lease in
  hex, and "shared":true with --read)
then holds until SIGINT, SIGTERM or SIGHUP, releases and exits 0.

With a command after '--', the command runs in its own process group with
COORD_LOCK_NAME, COORD_LOCK_KEY, COORD_FENCING_TOKEN and COORD_FENCING_SCOPE
set (the scope is where the lock's keys live in etcd, PREFIX+NAME/: the
same for --prefix team1/ report and team1/report, which are one lock), replacing inherited values; SIGINT and SIGTERM are
forwarded to it, SIGHUP as SIGTERM; coordctl releases the lock when it and its whole process
group have ended, and exits with its status (127 if it could not be
started). Processes the command leaves in its group when it exits
(background jobs) get SIGTERM, SIGKILL after --kill-grace, before the
release; so do those a forwarded signal does not end when it ends the
command.

On Linux the command's parent is a watchdog (coordctl re-executed, a child
subreaper, so every process the command starts stays below it, whatever
its group or session: setsid, a shell's job control). coordctl tells it
the lease's local deadline each time etcd acknowledges a keepalive. If
coordctl is frozen (SIGSTOP, starved) the deadline is not moved and the
watchdog sends the command's whole tree SIGTERM at the local deadline and
SIGKILL half the margin before the lease's earliest expiry; if coordctl is
killed (even SIGKILL) its pipe closes and the watchdog stops the tree at
once (SIGTERM, SIGKILL after --kill-grace or at that instant). The lock is
released only after the whole tree is dead.

What remains possible: a SIGSTOP of coordctl's process group, which holds
the watchdog too (kill -STOP -PGID, a terminal's Ctrl-Z); a SIGKILL of the
watchdog itself (the command gets SIGKILL from the kernel, its children
survive); a freeze of the whole machine; and, elsewhere than Linux, no
watchdog: processes that leave the group (setsid) or survive a killed
coordctl run on unfenced once the lease expires.

If the lock is lost while held — keepalives failing until the local deadline,
which comes a margin (a tenth of --ttl, at least 200ms) before etcd can
expire the lease; the lease revoked or the key deleted; the process frozen
(SIGSTOP) past its lease — coordctl says so on stderr, sends SIGTERM to the
command's group and SIGKILL after --kill-grace or half the margin before the
lease's earliest possible expiry on the server, whichever is first, and exits 4. So the
command is dead before etcd can grant the lock to anyone else, whatever
--kill-grace says (after a revoke or a deleted key, SIGKILL follows SIGTERM
at once); a --kill-grace given longer than half the margin is warned about
(not the default: it applies in full only to stops that are not losses). If the local
deadline passed before coordctl saw the command exit (coordctl was frozen
meanwhile), the exit is 4 too.

A write error on stdout (coordctl lock x | true) ends nothing: it is noted
once on stderr and nothing more is printed. SIGQUIT is forwarded to the
command like SIGINT; without a command it is not caught: coordctl dumps its
stacks and exits 2 without releasing, and the lease expires after --ttl.

--try exits 3 at once if the lock is held elsewhere; --timeout exits 3 if it
is not acquired in time (after one last try, so --timeout 1ns takes a free
lock). A wait longer than half a second is reported once on
stderr, naming the holder.

'coordctl lock status NAME' shows who holds and who waits. A lock literally
named "status" is taken with --name: coordctl lock --name status -- CMD.`,
		Example: `  coordctl lock jobs/nightly -- ./nightly.sh
  coordctl lock jobs/nightly --try -- ./nightly.sh     # exit 3 if it already runs
  coordctl lock db/migrate --timeout 30s --ttl 5s -- sh -c 'migrate --fencing-token "$COORD_FENCING_TOKEN"'
  coordctl lock reports --read -- ./read-report.sh     # readers share; 'coordctl lock reports' writes alone
  coordctl lock jobs/payout --lock-delay 10s -- ./payout.sh
  coordctl lock maintenance -w json                   # {"name":"maintenance","scope":"maintenance/","key":"maintenance/694d...","token":42,...}
  coordctl lock status jobs/nightly
  coordctl lock --name status -- ./job.sh              # a lock named "status"`,
	}
	opts.Bind(f, cmd, "lock", &nameFlag, func(ctx context.Context) error { return runLock(ctx, f, opts) })
	fl := cmd.Flags()
	f.AddEtcdFlags(cmd.PersistentFlags()) // also for subcommands (lock status)
	fl.DurationVar(&opts.TTL, "ttl", session.DefaultTTL, "lease TTL: a crashed holder is replaced about this long after it stopped (at least 1s)")
	fl.DurationVar(&opts.Timeout, "timeout", 0, "give up (exit 3) if the lock is not acquired within this time (0: wait for ever)")
	fl.BoolVar(&opts.Try, "try", false, "exit 3 at once if the lock is held elsewhere")
	fl.BoolVar(&opts.Read, "read", false, "take the lock shared with other readers (default: exclusive, a writer)")
	fl.DurationVar(&opts.LockDelay, "lock-delay", 0, "after a holder ahead was lost (not released), wait this long before taking the lock (0: off)")
	fl.DurationVar(&opts.KillGrace, "kill-grace", childproc.DefaultKillGrace, "time between SIGTERM and SIGKILL when the command must stop (on loss, at most until the lease's earliest expiry)")
	fl.StringVar(&opts.Prefix, "prefix", "", "namespace the lock's keys under this etcd key prefix")
	fl.StringVar(&nameFlag, "name", "", `the lock's NAME, instead of the argument (for a lock named "status")`)
	cmd.AddCommand(newLockStatusCmd(f))
	return cmd
}

// runLock acquires the lock, then holds it until ctx ends (no command) or
// the command exits, or until it is lost (exit 4).
func runLock(ctx context.Context, f *cmdutil.Factory, opts *lockOptions) error {
	p, client, err := f.StartEtcd(ctx, func() error { return opts.ValidateHold("lock", opts.PrimitiveConfig(primitive.KindLock, 0)) })
	if err != nil {
		return err
	}
	defer client.Close()

	notice := &hold.WaitNotice{Out: f.IO.ErrOut}
	lopts := []lock.Option{lock.WithTTL(opts.TTL), lock.WithSessionOptions(hold.SessionOptions(f)...),
		lock.WithPrefix(opts.Prefix), lock.WithLockDelay(opts.LockDelay),
		lock.WithOnWait(func(w lock.Waiting) { notice.Waiting(report.LockWaiting(w)) })}
	// A writer is a plain Mutex (NAME/<lease>), which every RWMutex reader
	// counts as a writer: 'coordctl lock NAME' keeps its meaning and layout.
	newMutex := lock.New
	if opts.Read {
		newMutex = lock.NewReader
	}
	m, err := newMutex(client, opts.Name, lopts...)
	if err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	// Close revokes the lease unless the key was released cleanly (the
	// library's release policy), so whatever is left is released; when etcd
	// is gone that cannot succeed, and exit need not wait for it.
	defer childproc.WaitAtMost(childproc.CloseGrace, func() { _ = m.Close() })

	held, err := acquireLock(ctx, f, m, opts, notice)
	notice.Stop()
	if err != nil {
		return err
	}
	return hold.RunKey(ctx, f, p, &opts.Options, "lock "+opts.Name, held, held.Unlock, report.LockHeldOf(held),
		childproc.KeyEnv(opts.Name, held.Key(), held.Token(), held.Scope()))
}

// acquireLock takes the lock as the flags say; "not acquired" (exit 3) is
// lock.ErrLocked or cmdutil.ErrNotAcquired.
func acquireLock(ctx context.Context, f *cmdutil.Factory, m *lock.Mutex, opts *lockOptions, notice *hold.WaitNotice) (*lock.Held, error) {
	held, timedOut, err := hold.Acquire(ctx, hold.AcquisitionOf(f, opts.Flags, notice), m.Lock, m.TryLock)
	switch {
	case err == nil:
		return held, nil
	case timedOut:
		return nil, cmdutil.Mark(cmdutil.ErrNotAcquired, fmt.Errorf("lock %s not acquired within %s", opts.Name, opts.Timeout))
	case errors.Is(err, lock.ErrLocked):
		return nil, err
	case ctx.Err() != nil:
		return nil, cmdutil.Mark(cmdutil.ErrNotAcquired, fmt.Errorf("interrupted while waiting for lock %s", opts.Name))
	}
	return nil, fmt.Errorf("acquire lock %s: %w", opts.Name, err)
}
