package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/lock"
)

type lockStatusOptions struct {
	Name   string
	Prefix string
}

func newLockStatusCmd(f *factory) *cobra.Command {
	opts := &lockStatusOptions{}
	cmd := &cobra.Command{
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
		Args: statusArgs("lock", "lock"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runLockStatus(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Prefix, "prefix", "", "the etcd key prefix the lock's keys are under (as given to coordctl lock --prefix)")
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

func runLockStatus(ctx context.Context, f *factory, opts *lockStatusOptions) error {
	return f.etcdCall(ctx, func() error { return needName("lock status", opts.Name) }, func(ctx context.Context, p *printer, c *clientv3.Client) error {
		st, err := lock.Status(ctx, c, opts.Prefix+opts.Name)
		if err != nil {
			return fmt.Errorf("lock status %s: %w", opts.Name, err)
		}
		st.Name = opts.Name // printed without the prefix
		return printStatus(p, st, fmt.Errorf("lock %s is free", opts.Name))
	})
}

// printStatus prints a lock's or semaphore's status; nobody holding it is
// exit 3 (free, the output says so).
func printStatus(p *printer, st interface{ Held() bool }, free error) error {
	if err := p.Print(st); err != nil {
		return err
	}
	if !st.Held() {
		return reported(mark(errNotAcquired, free))
	}
	return nil
}
