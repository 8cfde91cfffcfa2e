package benchcmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/bench/sembench"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

func newBenchSemCmd(f *cmdutil.Factory, harness func(context.Context, sembench.Options) (sembench.Result, error)) *cobra.Command {
	opts := sembench.Options{}
	cmd := &cobra.Command{
		Use:   "sem [--limits 1,3,10] [--duration D] [--handoffs N] [--hold D] [--unsafe-no-fsync]",
		Short: "Measure coordkit's semaphore (and etcd's concurrency.Mutex at limit 1)",
		Long: `Start an embedded single-member etcd in a temporary directory (fsync on, as a
user would run it, unless --unsafe-no-fsync) and measure coordkit's
semaphore:

  limit_N_acq_per_s   2×N workers acquire and release a semaphore of limit N
                      as fast as they can for --duration: acquisitions per
                      second, for each N of --limits
  handoff_p50_ms      two workers take turns at limit 1: from the holder's
  handoff_p99_ms      Release to the other's Acquire returning (--handoffs)

etcd has no semaphore. At limit 1 a semaphore is a mutex, so limit_1 and the
handoff are measured for go.etcd.io/etcd/client/v3/concurrency.Mutex too, in
the same run; its column shows "-" (JSON null) at other limits. Each worker
has its own connection and session. Results go to stdout, progress to
stderr. The ratio column is how many times better coordkit did.
-w json prints {"benchmark":"sem","fsync":BOOL,"rows":[{"metric","coordkit",
"etcd_concurrency","unit"}...]}.`,
		Example: `  coordctl bench sem
  coordctl bench sem -w json
  coordctl bench sem --limits 1,5 --duration 5s`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, _ *cobra.Command, _ []string) error {
			opts.Progress = f.IO.ErrOut
			return runBench(ctx, f, "sem", sembench.ErrOptions, harness, opts)
		}),
	}
	fl := cmd.Flags()
	fl.IntSliceVar(&opts.Limits, "limits", []int{1, 3, 10}, "semaphore limits measured, each with 2×limit workers (1..64)")
	fl.DurationVar(&opts.Duration, "duration", 3*time.Second, "length of each throughput run")
	fl.IntVar(&opts.Handoffs, "handoffs", 100, "handoffs measured per implementation at limit 1")
	fl.DurationVar(&opts.Hold, "hold", time.Millisecond, "in the handoff test, how long the holder keeps its slot after the waiter queued")
	fl.BoolVar(&opts.NoFsync, "unsafe-no-fsync", false, "run etcd without fsync (faster, not what users run)")
	return cmd
}
