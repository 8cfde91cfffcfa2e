package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/internal/report"
)

// statusOptions are the options of lock status and sem status.
type statusOptions struct {
	Name   string
	Prefix string
}

func newLockStatusCmd(f *factory) *cobra.Command {
	return statusCmd(f, "lock", "lock", runLockStatus, &cobra.Command{
		Use:   "status NAME [--prefix P]",
		Short: "Show who holds the lock NAME and who waits for it",
		Long: `Read the keys of the lock NAME in one request at one revision and print its
holders (one writer, or the readers that share it) with key, fencing token,
lease and the TTL the lease has left on the server, then the waiters in the
order they will be served. It reads every layout coordkit and etcd use:
coordctl lock (with and without --read), etcdctl lock, concurrency.Mutex and
recipes.RWMutex.

Exit 0 when the lock is held, 3 when nobody holds it (the output says
"free"). -w json prints one object:
  {"name":N,"revision":R,"held":BOOL,
   "holders":[{"key":K,"token":T,"lease":"HEX","mode":"exclusive"|"shared","ttl_s":S}],
   "waiters":[{"key":K,"token":T,"lease":"HEX","mode":M}]}
ttl_s is -1 when the lease was already gone when asked.

This is the status subcommand of 'coordctl lock': to hold a lock named
"status", use 'coordctl lock --name status'.`,
		Example: `  coordctl lock status jobs/nightly
  coordctl lock status jobs/nightly -w json
  coordctl lock status jobs/nightly >/dev/null || echo "nobody holds it"`,
	})
}

// statusCmd completes lock status and sem status: one NAME (statusArgs),
// --prefix, and run.
func statusCmd(f *factory, command, noun string, run func(context.Context, *factory, *statusOptions) error, cmd *cobra.Command) *cobra.Command {
	opts := &statusOptions{}
	cmd.Args = statusArgs(command, noun)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts.Name = args[0]
		return run(cmd.Context(), f, opts)
	}
	cmd.Flags().StringVar(&opts.Prefix, "prefix", "", "the etcd key prefix the "+noun+"'s keys are under (as given to coordctl "+command+" --prefix)")
	return cmd
}

// statusArgs checks the one NAME of lock status and sem status; the
// message says how to hold something named "status".
func statusArgs(command, noun string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageErrorf(`%s status needs exactly one NAME (to hold a %s named "status": coordctl %s --name status)`, command, noun, command)
		}
		return nil
	}
}

func runLockStatus(ctx context.Context, f *factory, opts *statusOptions) error {
	cfg := primitive.Config{Kind: primitive.KindLock, Name: opts.Name, Prefix: opts.Prefix}
	return readStatus(ctx, f, "lock", opts, cfg, func(ctx context.Context, c *clientv3.Client) (report.LockStatus, error) {
		st, err := primitive.ReadLock(ctx, c, cfg)
		return report.LockStatus{Name: opts.Name, Status: st}, err // printed without the prefix
	}, fmt.Errorf("lock %s is free", opts.Name))
}

// readStatus runs lock status and sem status: read within
// --command-timeout and print; nobody holding it is exit 3 (free, the
// output says so).
func readStatus[S interface{ Held() bool }](ctx context.Context, f *factory, command string, opts *statusOptions, cfg primitive.Config,
	read func(context.Context, *clientv3.Client) (S, error), free error) error {
	check := func() error {
		if err := needName(command+" status", opts.Name); err != nil {
			return err
		}
		return usageOrNil(cfg.ValidateKeys())
	}
	return f.etcdCall(ctx, check, func(ctx context.Context, p *printer, c *clientv3.Client) error {
		st, err := read(ctx, c)
		if err != nil {
			return fmt.Errorf("%s status %s: %w", command, opts.Name, err)
		}
		if err := p.Print(st); err != nil {
			return err
		}
		if !st.Held() {
			return reported(mark(errNotAcquired, free))
		}
		return nil
	})
}
