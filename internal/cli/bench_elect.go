package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/bench/electbench"
)

func newBenchElectCmd(f *factory) *cobra.Command { return newBenchElectCmdRun(f, electbench.Run) }

// newBenchElectCmdRun is newBenchElectCmd with the harness passed in
// (cli/cli's runF): tests pass one that records the options it gets.
func newBenchElectCmdRun(f *factory, harness func(context.Context, electbench.Options) (electbench.Result, error)) *cobra.Command {
	opts := electbench.Options{}
	cmd := &cobra.Command{
		Use:   "elect [--rounds N] [--crash-rounds N]",
		Short: "Handover and crash failover of coordkit's election against etcd's concurrency.Election",
		Long: `Start an embedded etcd and measure, in the same run, coordkit's election and
etcd's concurrency.Election (what 'etcdctl elect' uses) on it:

  handover_p50_ms, handover_p99_ms   the leader resigns → the next candidate's
      Campaign returns. The next candidate queued just before (the back of a
      busy line, or a leader rotating out): concurrency.Election's watch lands
      in etcd's slower unsynced watcher group, coordkit's in the synced one
      (why: the comment on attempt.wait in lock/mutex.go).
  handover_queued_200ms_p50_ms      the same with a candidate that had waited
      200ms: by then etcd has synced the watcher, and both are fast.
  crash_failover_ttl2_ms            TTL 2s; the leader stops its keepalives
      without revoking (coordkit: Orphan; etcd: its client closed) → the next
      candidate wins. Mostly the TTL: both wait for the lease to expire.

Progress goes to stderr; the table (-w json: {"benchmark":"elect","rows":
[{"metric","coordkit","etcd_concurrency","unit"}...]}) to stdout. The ratio
column is how many times better coordkit did (etcd_concurrency / coordkit).
The default run takes under a minute.`,
		Example: `  coordctl bench elect
  coordctl bench elect -w json
  coordctl bench elect --rounds 200 --crash-rounds 5`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := f.NotifyContext(cmd.Context())
			defer cancel()
			return runBenchElect(ctx, f, opts, harness)
		},
	}
	cmd.Flags().IntVar(&opts.Rounds, "rounds", 40, "handovers measured per implementation")
	cmd.Flags().IntVar(&opts.CrashRounds, "crash-rounds", 3, "crash failovers measured per implementation (each takes about the TTL, 2s)")
	return cmd
}

func runBenchElect(ctx context.Context, f *factory, opts electbench.Options, harness func(context.Context, electbench.Options) (electbench.Result, error)) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	opts.Progress = f.IO.ErrOut
	res, err := harness(ctx, opts)
	if err != nil {
		return benchError(ctx, "elect", electbench.ErrOptions, err)
	}
	return p.Print(benchOutput{res, res.Table()})
}
