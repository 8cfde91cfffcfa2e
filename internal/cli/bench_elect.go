package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/bench/electbench"
)

func newBenchElectCmd(f *factory, harness func(context.Context, electbench.Options) (electbench.Result, error),
	rolling func(context.Context, electbench.RollingOptions) (electbench.RollingResult, error)) *cobra.Command {
	opts := electbench.Options{}
	ropts := electbench.RollingOptions{}
	var html string
	cmd := &cobra.Command{
		Use:   "elect [--rounds N] [--crash-rounds N] | elect --rolling N [--preempt-rounds N] [--html FILE]",
		Short: "Handover and crash failover of coordkit's election against etcd's concurrency.Election",
		Long:  benchHelp("bench_elect"),
		Example: `  coordctl bench elect
  coordctl bench elect -w json
  coordctl bench elect --rounds 200 --crash-rounds 5
  coordctl bench elect --rolling 5
  coordctl bench elect --rolling 5 --html rolling.html -w json`,
		Args: argsUsage(cobra.NoArgs),
		RunE: benchRunE(f, func(ctx context.Context, cmd *cobra.Command) error {
			opts.Progress, ropts.Progress = f.IO.ErrOut, f.IO.ErrOut
			if cmd.Flags().Changed("rolling") {
				return runBenchElectRolling(ctx, f, ropts, html, rolling)
			}
			return runBench(ctx, f, "elect", electbench.ErrOptions, harness, opts)
		}),
	}
	cmd.Flags().IntVar(&ropts.Replicas, "rolling", 0, "measure a rolling upgrade of N sidecar processes instead (first-come against newest-version with a resign-to-best preStop)")
	cmd.Flags().IntVar(&ropts.PreemptRounds, "preempt-rounds", 20, "with --rolling: preemptions timed")
	cmd.Flags().StringVar(&html, "html", "", "with --rolling: also write the timelines and figures as an HTML page to FILE")
	cmd.Flags().IntVar(&opts.Rounds, "rounds", 40, "handovers measured per implementation")
	cmd.Flags().IntVar(&opts.CrashRounds, "crash-rounds", 3, "crash failovers measured per implementation (each takes about the TTL, 2s)")
	return cmd
}

// runBenchElectRolling is bench elect --rolling: coordinated election
// measured with real sidecar processes, this binary.
func runBenchElectRolling(ctx context.Context, f *factory, opts electbench.RollingOptions, html string,
	rolling func(context.Context, electbench.RollingOptions) (electbench.RollingResult, error)) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if opts.Binary, err = f.Executable(); err != nil {
		return fmt.Errorf("bench elect --rolling: the sidecars run this binary: %w", err)
	}
	res, err := rolling(ctx, opts)
	if err != nil {
		return benchError(ctx, "elect", electbench.ErrOptions, err)
	}
	if html != "" {
		if err := res.WriteHTMLFile(html); err != nil {
			return err
		}
	}
	return p.Print(res.Printed())
}
