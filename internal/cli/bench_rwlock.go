package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/bench/rwlockbench"
)

func newBenchRWLockCmd(f *factory, harness func(context.Context, rwlockbench.Options) (rwlockbench.Result, error)) *cobra.Command {
	opts := rwlockbench.Options{}
	cmd := &cobra.Command{
		Use:   "rwlock [--batches N] [--readers N] [--handoffs N] [--duration D] [--hold D] [--unsafe-no-fsync]",
		Short: "Compare coordkit's read-write lock with etcd's recipes.RWMutex",
		Long:  benchHelp("bench_rwlock"),
		Example: `  coordctl bench rwlock
  coordctl bench rwlock -w json
  coordctl bench rwlock --batches 50 --handoffs 200 --duration 5s`,
		Args: argsUsage(cobra.NoArgs),
		RunE: benchRunE(f, func(ctx context.Context, _ *cobra.Command) error {
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
