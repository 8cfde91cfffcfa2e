package benchcmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/bench/labbench"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

func newBenchLabCmd(f *cmdutil.Factory, harness func(context.Context, labbench.Options) (labbench.Result, error)) *cobra.Command {
	opts := labbench.Options{}
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Lab write throughput against bare hashicorp/raft; latency against the model",
		Long: `Measure what the lab's simulated network, client and history cost.

Without --model: write throughput of the lab (zero injected delay, in-memory
storage, clients next to the leader) against bare hashicorp/raft nodes on
raft's InmemTransport with the same state machine, node count and timeouts,
in the same run: sequential and concurrent writers, for each node count.
Each measurement runs for --duration. The ratio column is lab / bare_raft.

With --model: sequential write latency with a one-way link delay d and a
simulated fsync latency f, for each node count and delay, next to the model
docs/lab.md derives from hashicorp/raft's write path: 2d + 2f (the leader
persists, then replicates; a follower persists and answers; the leader
commits and applies). The ratio column is measured / model.

With --ui: the live page of coordctl lab --http (internal/labweb), on the
first --nodes count (default 5) with the last --writers count (default 16):
write throughput with the page's server running and an event stream
attached (and a command posted every 50ms) against the same cluster with
no page at all, alternating slices of --duration in total (default 6s);
the time from POST /api/command to that command's event on the stream;
and the time from a link cut or heal to the status event showing it. The
ratio column is page_attached / no_page.

-w json prints {"benchmark":"lab","rows":[{"metric","lab","bare_raft","unit"}]}
or, with --model, {"benchmark":"lab-model","rows":[{"nodes","delay_ms",
"fsync_ms","measured_p50_ms","model_ms","ratio","writes"}]}, or with --ui
{"benchmark":"lab-ui","rows":[{"metric","page_attached","no_page"?,"unit"}]}.`,
		Example: `  coordctl bench lab
  coordctl bench lab --duration 1s --nodes 3 -w json
  coordctl bench lab --model --fsync-latency 2ms
  coordctl bench lab --ui
  coordctl bench lab --ui --nodes 3 --writers 8 --duration 4s -w json`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, cmd *cobra.Command, _ []string) error {
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
