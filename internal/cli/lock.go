package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/childproc"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/session"
)

// Environment variables set for the command run under the lock.
const (
	envLockName     = "COORD_LOCK_NAME"
	envLockKey      = "COORD_LOCK_KEY"
	envFencingToken = "COORD_FENCING_TOKEN"
)

type lockOptions struct {
	Name      string
	TTL       time.Duration
	Timeout   time.Duration
	Try       bool
	KillGrace time.Duration
	Prefix    string
	Command   []string
}

// lockHeld is what coordctl lock prints once it holds the lock (without a
// command). Its JSON form is the stable contract; the lease is in hex, as
// etcdctl prints lease IDs.
type lockHeld struct {
	Name  string        `json:"name"`
	Key   string        `json:"key"`
	Token fencing.Token `json:"token"`
	Lease string        `json:"lease"`
}

func (h lockHeld) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintf(w, "holding lock %s key=%s token=%d lease=%s\n", h.Name, h.Key, h.Token, h.Lease)
	return err
}

func newLockCmd(f *factory) *cobra.Command {
	opts := &lockOptions{}
	cmd := &cobra.Command{
		Use:   "lock NAME [--ttl D] [--timeout D | --try] [--kill-grace D] [--prefix P] [-- COMMAND [ARGS...]]",
		Short: "Hold a fenced lock, alone or while a command runs",
		Long: `Acquire the lock NAME on etcd and hold it. Waiters are served in order (FIFO).
The fencing token is the create revision of the holder's key; it grows from
holder to holder, so a protected resource can refuse a holder that lost the
lock without knowing it (see 'coordctl resource').

Keys are laid out as etcd's concurrency.Mutex lays them out (NAME/<lease hex>),
so 'coordctl lock' and 'etcdctl lock' on the same name exclude each other.

Without a command, coordctl prints the holder once it has the lock:
  holding lock NAME key=K token=T lease=L
  (-w json: {"name":NAME,"key":K,"token":T,"lease":"L"}, lease in hex)
then holds until SIGINT or SIGTERM, releases and exits 0.

With a command after '--', the command runs in its own process group with
COORD_LOCK_NAME, COORD_LOCK_KEY and COORD_FENCING_TOKEN set (replacing
inherited values); SIGINT and SIGTERM are forwarded to it; coordctl releases
the lock when it and its whole process group have ended, and exits with its
status (127 if it could not be started). Processes the command leaves in its
group when it exits (background jobs) get SIGTERM, SIGKILL after
--kill-grace, before the release; so do those a forwarded signal does not end
when it ends the command.

What remains possible: a process that leaves the group on purpose (setsid,
as daemons do) is not stopped and may outlive the lock. If coordctl
itself is killed with SIGKILL, the command gets SIGKILL from the kernel
(Linux parent-death signal), but processes it started survive it and run on
unfenced once the lease expires; elsewhere the command survives too.

If the lock is lost while held — keepalives failing until the local deadline,
which comes before etcd can expire the lease; the lease revoked or the key
deleted; the process frozen (SIGSTOP) past its lease — coordctl says so on
stderr, sends SIGTERM to the command's group, SIGKILL after --kill-grace,
and exits 4.

--try exits 3 at once if the lock is held elsewhere; --timeout exits 3 if it
is not acquired in time. A wait longer than half a second is reported once on
stderr, naming the holder.`,
		Example: `  coordctl lock jobs/nightly -- ./nightly.sh
  coordctl lock jobs/nightly --try -- ./nightly.sh     # exit 3 if it already runs
  coordctl lock db/migrate --timeout 30s --ttl 5s -- sh -c 'migrate --fencing-token "$COORD_FENCING_TOKEN"'
  coordctl lock maintenance -w json                   # {"name":"maintenance","key":"maintenance/694d...","token":42,"lease":"694d..."}`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case len(args) == 0 || dash == 0:
				return usageErrorf("lock needs a NAME")
			case dash < 0 && len(args) > 1:
				return usageErrorf("unexpected argument %q: put the command after --", args[1])
			case dash > 1:
				return usageErrorf("unexpected argument %q: give one NAME, then the command after --", args[1])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name, opts.Command = args[0], args[1:]
			ctx, cancel := f.NotifyContext(cmd.Context())
			defer cancel()
			return runLock(ctx, f, opts)
		},
	}
	fl := cmd.Flags()
	f.addEtcdFlags(cmd.PersistentFlags()) // also for subcommands (lock status)
	fl.DurationVar(&opts.TTL, "ttl", lock.DefaultTTL, "lease TTL: a crashed holder is replaced about this long after it stopped (at least 1s)")
	fl.DurationVar(&opts.Timeout, "timeout", 0, "give up (exit 3) if the lock is not acquired within this time (0: wait for ever)")
	fl.BoolVar(&opts.Try, "try", false, "exit 3 at once if the lock is held elsewhere")
	fl.DurationVar(&opts.KillGrace, "kill-grace", childproc.DefaultKillGrace, "time between SIGTERM and SIGKILL when the command must stop")
	fl.StringVar(&opts.Prefix, "prefix", "", "namespace the lock's keys under this etcd key prefix")
	return cmd
}

func (o *lockOptions) validate() error {
	if err := checkLeaseTTL(o.TTL); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(o.Name) == "":
		return usageErrorf("lock needs a non-empty NAME")
	case o.TTL < time.Second:
		return usageErrorf("invalid --ttl %s: must be at least 1s", o.TTL)
	case o.Timeout < 0:
		return usageErrorf("invalid --timeout %s: must not be negative", o.Timeout)
	case o.Try && o.Timeout > 0:
		return usageErrorf("--try and --timeout exclude each other")
	case o.KillGrace <= 0:
		return usageErrorf("invalid --kill-grace %s: must be positive", o.KillGrace)
	}
	return nil
}

// runLock acquires the lock, then holds it until ctx ends (no command) or
// the command exits, or until it is lost (exit 4).
func runLock(ctx context.Context, f *factory, opts *lockOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if err := opts.validate(); err != nil {
		return err
	}
	client, err := f.EtcdClient(ctx)
	if err != nil {
		return err
	}
	defer client.Close()

	notice := &waitNotice{out: f.IO.ErrOut}
	m, err := lock.New(client, opts.Name, lock.WithTTL(opts.TTL), lock.WithPrefix(opts.Prefix), lock.WithOnWait(notice.waiting),
		// Without quorum etcd grants no lease: fail within --command-timeout
		// instead of waiting for one forever.
		lock.WithSessionOptions(session.WithGrantTimeout(f.Global.CommandTimeout)))
	if err != nil {
		return usageErrorf("%v", err)
	}
	// Close revokes the lease, so whatever is left is released; when etcd
	// is gone that cannot succeed, and exit need not wait for it.
	defer waitAtMost(lockCloseGrace, func() { _ = m.Close() })

	held, err := acquireLock(ctx, m, opts)
	notice.stop()
	if err != nil {
		return err
	}
	release := func() error {
		uctx, cancel := f.CommandContext(context.WithoutCancel(ctx))
		defer cancel()
		if held.Err() != nil {
			// Lost: removing a key that may still be there only speeds up
			// the next holder; do not let an unreachable etcd hold up exit.
			uctx, cancel = context.WithTimeout(uctx, lockCloseGrace)
			defer cancel()
		}
		err := held.Unlock(uctx)
		if errors.Is(err, lock.ErrNotHeld) {
			return nil // lost: reported by the caller
		}
		return err
	}

	if len(opts.Command) == 0 {
		if err := p.Print(lockHeld{Name: opts.Name, Key: held.Key(), Token: held.Token(), Lease: fmt.Sprintf("%x", int64(held.Lease()))}); err != nil {
			_ = release()
			return err
		}
		select {
		case <-ctx.Done():
			if err := release(); err != nil {
				return fmt.Errorf("release lock %s: %w", opts.Name, err)
			}
			return nil
		case <-held.Lost():
			_ = release()
			return mark(errLost, fmt.Errorf("lost lock %s: %w", opts.Name, held.Err()))
		}
	}
	return runUnderLock(f, opts, held, release)
}

// lockCloseGrace bounds the clean-up after a loss, when etcd may be gone.
const lockCloseGrace = time.Second

// waitAtMost runs fn and waits for it at most d.
func waitAtMost(d time.Duration, fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// waitNoticeAfter is how long a wait lasts before coordctl lock says so.
const waitNoticeAfter = 500 * time.Millisecond

// waitNotice prints, once, that a Lock has been waiting for a while and for
// whom; a short wait goes unmentioned.
type waitNotice struct {
	out   io.Writer
	mu    sync.Mutex
	timer *time.Timer
	done  bool
}

func (n *waitNotice) waiting(w lock.Waiting) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done || n.timer != nil {
		return
	}
	n.timer = time.AfterFunc(waitNoticeAfter, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if !n.done {
			fmt.Fprintf(n.out, "waiting for lock %s (held by key %s, token %d)...\n", w.Name, w.HolderKey, w.HolderToken)
		}
	})
}

// stop ends the notice: nothing is printed after it returns.
func (n *waitNotice) stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.done = true
	if n.timer != nil {
		n.timer.Stop()
	}
}

// acquireLock takes the lock as the flags say; "not acquired" (exit 3) is
// lock.ErrLocked or errNotAcquired.
func acquireLock(ctx context.Context, m *lock.Mutex, opts *lockOptions) (*lock.Held, error) {
	actx := ctx
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	var held *lock.Held
	var err error
	if opts.Try {
		held, err = m.TryLock(actx)
	} else {
		held, err = m.Lock(actx)
	}
	switch {
	case err == nil:
		return held, nil
	case errors.Is(err, lock.ErrLocked):
		return nil, err
	case ctx.Err() != nil:
		return nil, mark(errNotAcquired, fmt.Errorf("interrupted while waiting for lock %s", opts.Name))
	case actx.Err() != nil:
		return nil, mark(errNotAcquired, fmt.Errorf("lock %s not acquired within %s", opts.Name, opts.Timeout))
	}
	return nil, fmt.Errorf("acquire lock %s: %w", opts.Name, err)
}

// runUnderLock runs the command while the lock is held: signals are
// forwarded, its exit status passes through, and loss stops it (exit 4).
func runUnderLock(f *factory, opts *lockOptions, held *lock.Held, release func() error) error {
	sigs, stopSigs := f.Signals()
	defer stopSigs()
	child, err := childproc.Start(childproc.Config{
		Path: opts.Command[0],
		Args: opts.Command[1:],
		Env: map[string]string{
			envLockName:     opts.Name,
			envLockKey:      held.Key(),
			envFencingToken: held.Token().String(),
		},
		Stdin:     f.IO.In,
		Stdout:    f.IO.Out,
		Stderr:    f.IO.ErrOut,
		KillGrace: opts.KillGrace,
	})
	if err != nil {
		_ = release()
		return &childStartError{err: err}
	}
	for {
		select {
		case <-child.Done():
			// The lock protects everything the command started: what it left
			// in its group is stopped before the release.
			if child.GroupAlive() {
				fmt.Fprintf(f.IO.ErrOut, "coordctl: the command exited leaving processes in its group; stopping them (SIGTERM, SIGKILL after %s) before releasing lock %s\n", opts.KillGrace, opts.Name)
			}
			code := child.Stop()
			select {
			case <-held.Lost():
				// Lost as the command ended: say so, but its status stands.
				fmt.Fprintf(f.IO.ErrOut, "coordctl: lock %s was lost as the command ended: %v\n", opts.Name, held.Err())
			default:
			}
			if err := release(); err != nil {
				fmt.Fprintf(f.IO.ErrOut, "coordctl: release lock %s: %v\n", opts.Name, err)
			}
			if code == 0 {
				return nil
			}
			return &childExitError{code: code}
		case sig := <-sigs:
			if s, ok := sig.(syscall.Signal); ok {
				_ = child.Signal(s)
			}
		case <-held.Lost():
			fmt.Fprintf(f.IO.ErrOut, "coordctl: lost lock %s: %v; stopping the command (SIGTERM, SIGKILL after %s)\n", opts.Name, held.Err(), opts.KillGrace)
			child.Stop()
			_ = release()
			return reported(errLost)
		}
	}
}
