package benchcmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/bench/rwlockbench"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

func newBenchRWLockCmd(f *cmdutil.Factory, harness func(context.Context, rwlockbench.Options) (rwlockbench.Result, error)) *cobra.Command {
	opts := rwlockbench.Options{}
	cmd := &cobra.Command{
		Use:   "rwlock [--batches N] [--readers N] [--handoffs N] [--duration D] [--hold D] [--unsafe-no-fsync]",
		Short: "Compare coordkit's read-write lock with etcd's recipes.RWMutex",
		Long: `Start an embedded single-member etcd in a temporary directory (fsync on, as a
user would run it, unless --unsafe-no-fsync) and measure, side by side in one
run, coordkit's lock.RWMutex and go.etcd.io/etcd/client/v3/experimental/
recipes.RWMutex:

  read_batch_admit_p50_ms   --readers readers queue behind a writer, which
  read_batch_admit_p99_ms   releases --hold after they queued: from its Unlock
                            call to each reader's RLock returning, over every
                            reader of --batches batches
  writer_handoff_p50_ms     two writers take turns: from the holder's Unlock
  writer_handoff_p99_ms     to the other's Lock returning (--handoffs samples)
  mixed_8r2w_per_s          8 readers and 2 writers lock and unlock as fast as
  mixed_8r2w_writes_per_s   they can for --duration: all acquisitions, and
                            the writers' alone, per second

Each participant has its own connection and session, and waiters queue at a
random moment. The recipe's waiters watch from their own key's revision,
which lands their watch in etcd's unsynced watcher group, served by a loop
every 100ms: a short hold (the default --hold) pays up to 100ms per handoff.
coordkit's watches are synced from the start. Results go to stdout, progress
to stderr. The ratio column is how many times better coordkit did.
-w json prints {"benchmark":"rwlock","fsync":BOOL,"rows":[{"metric",
"coordkit","etcd_recipes","unit"}...]}.`,
		Example: `  coordctl bench rwlock
  coordctl bench rwlock -w json
  coordctl bench rwlock --batches 50 --handoffs 200 --duration 5s`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, _ *cobra.Command, _ []string) error {
			opts.Progress = f.IO.ErrOut
			return runBench(ctx, f, "rwlock", rwlockbench.ErrOptions, harness, opts)
		}),
	}
	fl := cmd.Flags()
	fl.IntVar(&opts.Batches, "batches", 20, "writer-then-readers batches measured per implementation")
	fl.IntVar(&opts.Readers, "readers", 8, "readers queued behind the writer in each batch (1..64)")
	fl.IntVar(&opts.Handoffs, "handoffs", 100, "writer handoffs measured per implementation")
	fl.DurationVar(&opts.Duration, "duration", 3*time.Second, "length of each mixed run")
	fl.DurationVar(&opts.Hold, "hold", time.Millisecond, "how long a holder keeps the lock after its waiters queued")
	fl.BoolVar(&opts.NoFsync, "unsafe-no-fsync", false, "run etcd without fsync (faster, not what users run)")
	return cmd
}
