package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/cluster/labbench"
)

type benchLabOptions struct {
	Duration time.Duration
	Nodes    []int
	Writers  []int
	Model    bool
	Delays   []time.Duration
	Fsync    time.Duration
	Writes   int
	Seed     int64
}

func newBenchLabCmd(f *factory) *cobra.Command {
	opts := &benchLabOptions{}
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Lab write throughput against bare hashicorp/raft; latency against the model",
		Long: `Measure what the lab's simulated network, client and history cost.

Without --model: write throughput of the lab (zero injected delay, in-memory
storage, clients next to the leader) against bare hashicorp/raft nodes on
raft's InmemTransport with the same state machine, node count and timeouts,
in the same run: sequential and concurrent writers, for each node count.
Each measurement runs for --duration.

With --model: sequential write latency with a one-way link delay d and a
simulated fsync latency f, for each node count and delay, next to the model
docs/lab.md derives from hashicorp/raft's write path: 2d + 2f (the leader
persists, then replicates; a follower persists and answers; the leader
commits and applies).

-w json prints {"benchmark":"lab","rows":[{"metric","lab","bare_raft","unit"}]}
or, with --model, {"benchmark":"lab-model","rows":[{"nodes","delay_ms",
"fsync_ms","measured_p50_ms","model_ms","ratio","writes"}]}.`,
		Example: `  coordctl bench lab
  coordctl bench lab --duration 1s --nodes 3 -w json
  coordctl bench lab --model --fsync-latency 2ms`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := f.NotifyContext(cmd.Context())
			defer cancel()
			return runBenchLab(ctx, f, opts)
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&opts.Duration, "duration", 2*time.Second, "length of each throughput measurement")
	fl.IntSliceVar(&opts.Nodes, "nodes", []int{3, 5}, "node counts (with --model default 3,5,7)")
	fl.IntSliceVar(&opts.Writers, "writers", []int{1, 64}, "concurrent writer counts (1 is sequential)")
	fl.BoolVar(&opts.Model, "model", false, "measure write latency against the model instead")
	fl.DurationSliceVar(&opts.Delays, "delays", []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond}, "one-way delays for --model")
	fl.DurationVar(&opts.Fsync, "fsync-latency", 2*time.Millisecond, "simulated fsync latency for --model")
	fl.IntVar(&opts.Writes, "writes", 30, "sequential writes per configuration for --model")
	fl.Int64Var(&opts.Seed, "seed", 1, "seed of the generated writes")
	return cmd
}

type benchLabResult struct {
	Benchmark string         `json:"benchmark"`
	Rows      []labbench.Row `json:"rows"`
}

func (r benchLabResult) WriteSimple(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tLAB\tBARE RAFT\tRATIO\tUNIT")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.2f\t%s\n", row.Metric, row.Lab, row.BareRaft, row.Ratio(), row.Unit)
	}
	return tw.Flush()
}

type benchLabModelResult struct {
	Benchmark string              `json:"benchmark"`
	Rows      []labbench.ModelRow `json:"rows"`
}

func (r benchLabModelResult) WriteSimple(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODES\tDELAY\tFSYNC\tMEASURED P50\tMODEL 2d+2f\tRATIO")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%d\t%.0fms\t%.1fms\t%.2fms\t%.2fms\t%.2f\n", row.Nodes, row.DelayMs, row.FsyncMs, row.MeasuredP50Ms, row.ModelMs, row.Ratio)
	}
	return tw.Flush()
}

func runBenchLab(ctx context.Context, f *factory, opts *benchLabOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	for _, n := range opts.Nodes {
		if n < 1 || n > 7 {
			return usageErrorf("invalid --nodes %d: must be 1 to 7", n)
		}
	}
	progress := func(s string) { fmt.Fprintf(f.IO.ErrOut, "bench lab: %s\n", s) }
	if opts.Model {
		if opts.Writes < 1 {
			return usageErrorf("invalid --writes %d: must be positive", opts.Writes)
		}
		nodes := opts.Nodes
		if !flagChanged(opts) {
			nodes = []int{3, 5, 7}
		}
		rows, err := labbench.Latency(ctx, labbench.ModelOptions{
			Nodes: nodes, Delays: opts.Delays, Fsync: opts.Fsync, Writes: opts.Writes, Seed: opts.Seed, OnProgress: progress,
		})
		if err != nil {
			return fmt.Errorf("bench lab: %w", err)
		}
		return p.Print(benchLabModelResult{Benchmark: "lab-model", Rows: rows})
	}
	if opts.Duration <= 0 {
		return usageErrorf("invalid --duration %s: must be positive", opts.Duration)
	}
	for _, w := range opts.Writers {
		if w < 1 {
			return usageErrorf("invalid --writers %d: must be positive", w)
		}
	}
	rows, err := labbench.Throughput(ctx, labbench.ThroughputOptions{
		Nodes: opts.Nodes, Writers: opts.Writers, Duration: opts.Duration, Seed: opts.Seed, OnProgress: progress,
	})
	if err != nil {
		return fmt.Errorf("bench lab: %w", err)
	}
	return p.Print(benchLabResult{Benchmark: "lab", Rows: rows})
}

// flagChanged reports whether --nodes differs from the throughput default,
// so that --model can default to 3, 5 and 7 nodes.
func flagChanged(o *benchLabOptions) bool {
	return !(len(o.Nodes) == 2 && o.Nodes[0] == 3 && o.Nodes[1] == 5)
}
