package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/bench/labbench"
)

func newBenchLabCmd(f *factory, harness func(context.Context, labbench.Options) (labbench.Result, error)) *cobra.Command {
	opts := labbench.Options{}
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Lab write throughput against bare hashicorp/raft; latency against the model",
		Long:  benchHelp("bench_lab"),
		Example: `  coordctl bench lab
  coordctl bench lab --duration 1s --nodes 3 -w json
  coordctl bench lab --model --fsync-latency 2ms
  coordctl bench lab --ui
  coordctl bench lab --ui --nodes 3 --writers 8 --duration 4s -w json`,
		Args: argsUsage(cobra.NoArgs),
		RunE: benchRunE(f, func(ctx context.Context, cmd *cobra.Command) error {
			opts = opts.WithModeDefaults(cmd.Flags().Changed)
			opts.Progress = f.IO.ErrOut
			return runBench(ctx, f, "lab", labbench.ErrOptions, harness, opts)
		}),
	}
	fl := cmd.Flags()
	fl.DurationVar(&opts.Duration, "duration", 2*time.Second, "length of each throughput measurement")
	fl.IntSliceVar(&opts.Nodes, "nodes", []int{3, 5}, "node counts, 1 to 7 (with --model default 3,5,7)")
	fl.IntSliceVar(&opts.Writers, "writers", []int{1, 64}, "concurrent writer counts (1 is sequential)")
	fl.BoolVar(&opts.Model, "model", false, "measure write latency against the model instead")
	fl.BoolVar(&opts.UI, "ui", false, "measure the live page (lab --http) instead: its cost and event latency")
	fl.DurationSliceVar(&opts.Delays, "delays", []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond}, "one-way delays for --model")
	fl.DurationVar(&opts.Fsync, "fsync-latency", 2*time.Millisecond, "simulated fsync latency for --model")
	fl.IntVar(&opts.Writes, "writes", 30, "sequential writes per configuration for --model")
	fl.Int64Var(&opts.Seed, "seed", 1, "seed of the generated writes")
	return cmd
}
