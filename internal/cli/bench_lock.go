package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/bench/lockbench"
)

func newBenchLockCmd(f *factory, harness func(context.Context, lockbench.Options) (lockbench.Result, error)) *cobra.Command {
	opts := lockbench.Options{}
	cmd := &cobra.Command{
		Use:   "lock [--iterations N] [--handoffs N] [--duration D] [--hold D] [--workers 2,8,32] [--unsafe-no-fsync] [--against redsync --redis ADDR] [--against pg-advisory --dsn DSN]",
		Short: "Compare coordkit's lock with etcd's concurrency.Mutex (and redsync on Redis, PostgreSQL advisory locks)",
		Long:  benchHelp("bench_lock"),
		Example: `  coordctl bench lock
  coordctl bench lock -w json
  coordctl bench lock --iterations 500 --handoffs 300 --duration 5s
  coordctl bench lock --against redsync --redis 127.0.0.1:6379
  coordctl bench lock --against pg-advisory --dsn postgres://root@127.0.0.1:5432/test`,
		Args: argsUsage(cobra.NoArgs),
		RunE: benchRunE(f, func(ctx context.Context, _ *cobra.Command) error {
			opts.Progress = f.IO.ErrOut
			if opts.DSN != "" && opts.Coordctl == "" {
				var err error
				if opts.Coordctl, err = f.Executable(); err != nil {
					return fmt.Errorf("find coordctl for the crash handoff's holder processes: %w", err)
				}
			}
			return runBench(ctx, f, "lock", lockbench.ErrOptions, harness, opts)
		}),
	}
	fl := cmd.Flags()
	fl.IntVar(&opts.Iterations, "iterations", 200, "uncontended lock+unlock rounds per implementation")
	fl.IntVar(&opts.Handoffs, "handoffs", 100, "handoffs measured per implementation")
	fl.DurationVar(&opts.Duration, "duration", 3*time.Second, "length of each contended run")
	fl.DurationVar(&opts.Hold, "hold", time.Millisecond, "in the handoff test, how long the holder keeps the lock after the waiter queued")
	fl.IntSliceVar(&opts.Workers, "workers", []int{2, 8, 32}, "contending clients of each contended run (2..256)")
	fl.BoolVar(&opts.NoFsync, "unsafe-no-fsync", false, "run etcd without fsync (faster, not what users run)")
	fl.StringSliceVar(&opts.Against, "against", nil, "also measure these locks: redsync (needs --redis), pg-advisory (needs --dsn)")
	fl.StringVar(&opts.Redis, "redis", "", "the Redis server (host:port) of --against redsync")
	fl.StringVar(&opts.DSN, "dsn", "", "the PostgreSQL database of --against pg-advisory")
	fl.IntVar(&opts.CrashHandoffs, "crash-handoffs", 5, "against pg-advisory: crash handoffs measured per lock")
	return cmd
}
