package semcmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/childproc"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil/hold"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/internal/report"
	"github.com/coordkit/coordkit/semaphore"
	"github.com/coordkit/coordkit/session"
)

type semOptions struct {
	hold.Options
	Limit int
}

// NewCmd returns the command coordctl sem.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &semOptions{}
	var nameFlag string
	cmd := &cobra.Command{
		Use:   "sem NAME --limit N [--ttl D] [--timeout D | --try] [--lock-delay D] [--kill-grace D] [--prefix P] [-- COMMAND [ARGS...]]",
		Short: "Hold one of N slots of a fenced semaphore, alone or while a command runs",
		Long: `Acquire one of the --limit slots of the semaphore NAME on etcd and hold it:
at most N holders at once, waiters served in order (FIFO), a release wakes
one waiter.

Each holder has a slot i in [0, N) and a fencing token, the create revision
of its slot key NAME/slots/i. The resource fences per slot: the scope is
the slot's key, PREFIX+NAME/slots/i (never a lock's scope, whatever its
name), so a holder frozen in slot i is refused once slot i went to someone
else who wrote or fenced, and the other slots are not affected. 'coordctl
resource put' and 'coordctl sql' take the scope from COORD_FENCING_SCOPE.

The limit is stored in etcd by the first acquirer (NAME/limit). A coordctl
sem whose --limit differs from the stored one fails (exit 1) and says the
stored limit; all users of a name must agree on it.

Without a command, coordctl prints the holder once it has a slot:
  holding semaphore NAME slot=I scope=S key=K token=T lease=L
  (-w json: {"name","limit","slot","scope","key","token","lease"}, lease in hex)
then holds until SIGINT, SIGTERM or SIGHUP, releases and exits 0.

With a command after '--', the command runs in its own process group with
COORD_LOCK_NAME (NAME), COORD_LOCK_KEY (the slot key), COORD_FENCING_TOKEN,
COORD_FENCING_SCOPE (PREFIX+NAME/slots/I) and COORD_SEM_SLOT (I) set, replacing inherited
values; signals, exit status, loss (exit 4, SIGKILL no later than the
lease's earliest expiry) and stdout errors as for 'coordctl lock'.

--try exits 3 at once if no slot is free or others wait; --timeout exits 3
if no slot is acquired in time. --lock-delay D: when a slot's holder was
lost (lease expired or revoked) rather than released, the next holder of that
slot takes it no earlier than D after its key went.

'coordctl sem status NAME' shows the holders and waiters; 'coordctl sem
set-limit NAME N' changes the stored limit and 'coordctl sem delete NAME'
removes the semaphore. A semaphore named "status", "set-limit" or "delete"
is taken with --name: coordctl sem --name status --limit 2 -- CMD.`,
		Example: `  coordctl sem jobs/encoders --limit 3 -- ./encode.sh
  coordctl sem jobs/encoders --limit 3 --try -- ./encode.sh     # exit 3 if all 3 slots are busy
  coordctl sem db/pool --limit 2 -- sh -c 'coordctl resource put out v1'   # --scope db/pool/slots/I from the environment
  coordctl sem jobs/encoders --limit 3 -w json                 # {"name":"jobs/encoders","limit":3,"slot":0,"scope":"jobs/encoders/slots/0",...}
  coordctl sem status jobs/encoders`,
	}
	opts.Bind(f, cmd, "sem", &nameFlag, func(ctx context.Context) error { return runSem(ctx, f, opts) })
	fl := cmd.Flags()
	fl.IntVar(&opts.Limit, "limit", 0, "number of slots: at most this many holders at once (required)")
	fl.DurationVar(&opts.TTL, "ttl", session.DefaultTTL, "lease TTL: a crashed holder's slot is freed about this long after it stopped (at least 1s)")
	fl.DurationVar(&opts.Timeout, "timeout", 0, "give up (exit 3) if no slot is acquired within this time (0: wait for ever)")
	fl.BoolVar(&opts.Try, "try", false, "exit 3 at once if no slot is free")
	fl.DurationVar(&opts.LockDelay, "lock-delay", 0, "after a slot's holder was lost (not released), wait this long before taking that slot (0: off)")
	fl.DurationVar(&opts.KillGrace, "kill-grace", childproc.DefaultKillGrace, "time between SIGTERM and SIGKILL when the command must stop (on loss, at most until the lease's earliest expiry)")
	fl.StringVar(&opts.Prefix, "prefix", "", "namespace the semaphore's keys under this etcd key prefix")
	fl.StringVar(&nameFlag, "name", "", `the semaphore's NAME, instead of the argument (for one named "status")`)
	f.AddEtcdFlags(cmd.PersistentFlags()) // also for sem status
	cmd.AddCommand(newSemStatusCmd(f), newSemSetLimitCmd(f), newSemDeleteCmd(f))
	return cmd
}

func (o *semOptions) validate() error {
	if err := cmdutil.NeedName("sem", o.Name); err != nil {
		return err
	}
	if o.Limit < 1 {
		return cmdutil.UsageErrorf("sem needs --limit N with N at least 1")
	}
	return o.Options.ValidateHold("sem", o.PrimitiveConfig(primitive.KindSemaphore, o.Limit))
}

// runSem acquires a slot, then holds it as runLock holds a lock.
func runSem(ctx context.Context, f *cmdutil.Factory, opts *semOptions) error {
	p, client, err := f.StartEtcd(ctx, opts.validate)
	if err != nil {
		return err
	}
	defer client.Close()

	notice := &hold.WaitNotice{Out: f.IO.ErrOut}
	s, err := semaphore.New(client, opts.Name, opts.Limit,
		semaphore.WithTTL(opts.TTL), semaphore.WithSessionOptions(hold.SessionOptions(f)...), semaphore.WithPrefix(opts.Prefix), semaphore.WithLockDelay(opts.LockDelay),
		semaphore.WithOnWait(func(w semaphore.Waiting) { notice.Waiting(report.SemWaiting(w)) }))
	if err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	defer childproc.WaitAtMost(childproc.CloseGrace, func() { _ = s.Close() }) // as lock's Close

	held, err := acquireSlot(ctx, f, s, opts, notice)
	notice.Stop()
	if err != nil {
		return err
	}
	return hold.RunKey(ctx, f, p, &opts.Options, fmt.Sprintf("semaphore %s slot %d", opts.Name, held.Slot()), held, held.Release, report.SemHeldOf(held, opts.Limit),
		childproc.KeyEnv(opts.Name, held.Key(), held.Token(), held.Scope(), childproc.EnvSemSlot, strconv.Itoa(held.Slot())))
}

// acquireSlot takes a slot as the flags say; "not acquired" (exit 3) is
// cmdutil.ErrNotAcquired.
func acquireSlot(ctx context.Context, f *cmdutil.Factory, s *semaphore.Semaphore, opts *semOptions, notice *hold.WaitNotice) (*semaphore.Held, error) {
	held, timedOut, err := hold.Acquire(ctx, hold.AcquisitionOf(f, opts.Flags, notice), s.Acquire, s.TryAcquire)
	switch {
	case err == nil:
		return held, nil
	case timedOut:
		return nil, cmdutil.Mark(cmdutil.ErrNotAcquired, fmt.Errorf("semaphore %s: no slot acquired within %s", opts.Name, opts.Timeout))
	case errors.Is(err, semaphore.ErrNoSlot):
		return nil, cmdutil.Mark(cmdutil.ErrNotAcquired, err)
	case errors.Is(err, semaphore.ErrLimitMismatch):
		return nil, fmt.Errorf("acquire semaphore %s: %w (all users of a name must agree; to change the stored limit: coordctl sem set-limit %s N, or coordctl sem delete %s once nobody holds it)", opts.Name, err, opts.Name, opts.Name)
	case ctx.Err() != nil:
		return nil, cmdutil.Mark(cmdutil.ErrNotAcquired, fmt.Errorf("interrupted while waiting for semaphore %s", opts.Name))
	}
	return nil, fmt.Errorf("acquire semaphore %s: %w", opts.Name, err)
}

func newSemStatusCmd(f *cmdutil.Factory) *cobra.Command {
	return cmdutil.StatusCmd(f, "sem", "semaphore", runSemStatus, &cobra.Command{
		Use:   "status NAME [--prefix P]",
		Short: "Show the holders of the semaphore NAME and who waits",
		Long: `Read the keys of the semaphore NAME in one request at one revision and print
its stored limit, its holders by slot (key, fencing scope (the slot's key), token,
lease and the TTL the lease has left on the server), then the waiters in the
order they will be served.

Exit 0 when at least one slot is held, 3 when none is. -w json prints one
object:
  {"name":N,"revision":R,"limit":L,"held":BOOL,
   "holders":[{"key":K,"token":T,"lease":"HEX","slot":I,"scope":K,"ttl_s":S}],
   "waiters":[{"key":K,"token":T,"lease":"HEX"}]}
limit is 0 if none is stored; ttl_s is -1 when the lease was already gone.

This is the status subcommand of 'coordctl sem': to hold a semaphore named
"status", use 'coordctl sem --name status'.`,
		Example: `  coordctl sem status jobs/encoders
  coordctl sem status jobs/encoders -w json`,
	})
}

func runSemStatus(ctx context.Context, f *cmdutil.Factory, opts *cmdutil.StatusOptions) error {
	cfg := primitive.Config{Kind: primitive.KindSemaphore, Name: opts.Name, Prefix: opts.Prefix}
	return cmdutil.ReadStatus(ctx, f, "sem", opts, cfg, func(ctx context.Context, c *clientv3.Client) (report.SemStatus, error) {
		st, err := primitive.ReadSemaphore(ctx, c, cfg)
		return report.SemStatus{Name: opts.Name, Status: st}, err // printed without the prefix; a slot's scope is its key
	}, fmt.Errorf("semaphore %s: no slot held", opts.Name))
}
