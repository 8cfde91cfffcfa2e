package lockcmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/internal/report"
)

func newLockStatusCmd(f *cmdutil.Factory) *cobra.Command {
	return cmdutil.StatusCmd(f, "lock", "lock", runLockStatus, &cobra.Command{
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

func runLockStatus(ctx context.Context, f *cmdutil.Factory, opts *cmdutil.StatusOptions) error {
	cfg := primitive.Config{Kind: primitive.KindLock, Name: opts.Name, Prefix: opts.Prefix}
	return cmdutil.ReadStatus(ctx, f, "lock", opts, cfg, func(ctx context.Context, c *clientv3.Client) (report.LockStatus, error) {
		st, err := primitive.ReadLock(ctx, c, cfg)
		return report.LockStatus{Name: opts.Name, Status: st}, err // printed without the prefix
	}, fmt.Errorf("lock %s is free", opts.Name))
}
