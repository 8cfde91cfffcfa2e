package benchcmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/bench/electbench"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

func newBenchElectCmd(f *cmdutil.Factory, harness func(context.Context, electbench.Options) (electbench.Result, error),
	rolling func(context.Context, electbench.RollingOptions) (electbench.RollingResult, error)) *cobra.Command {
	opts := electbench.Options{}
	ropts := electbench.RollingOptions{}
	var html string
	cmd := &cobra.Command{
		Use:   "elect [--rounds N] [--crash-rounds N] | elect --rolling N [--preempt-rounds N] [--html FILE]",
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
The default run takes under a minute.

With --rolling N it measures coordinated election instead, with real
sidecar processes (this coordctl binary) on a fresh embedded etcd: N
replicas at version 1.0.0 are rolled to 2.0.0 one at a time, the leader
first (stop one, start one, wait until it is queued and leadership has
settled), twice side by side: first-come (SIGTERM: the leader resigns and
the next in line leads) and newest-version with a preStop hook that POSTs
/v1/resign?to=best before the SIGTERM. Each sidecar runs a command that
logs its fencing token and the time when it starts and stops; it runs only
while its sidecar leads, so the log is the resource's view:

  leadership_changes     changes of leader during the roll
  gap_p50/p99/max_ms     from one leader's command stopping to the next one's starting
  leaderless_total_ms    the gaps summed
  overlapping_leaders    a command that started before the previous one stopped
  tokens_decreasing      a leader whose token was not above its predecessor's
  preempt_p50/p99_ms     (in-process, priority policy) from a priority-10
      candidate's key appearing to it leading, with two candidates queued
      between the leader and it; preempt_from_start_p50_ms from its
      campaign starting (a lease grant and a put before it joins);
      etcd_commit_p50_ms is one put, the unit.

Then it draws each replica's role over time for both rolls (--html FILE
writes the same as a page).`,
		Example: `  coordctl bench elect
  coordctl bench elect -w json
  coordctl bench elect --rounds 200 --crash-rounds 5
  coordctl bench elect --rolling 5
  coordctl bench elect --rolling 5 --html rolling.html -w json`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, cmd *cobra.Command, _ []string) error {
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
func runBenchElectRolling(ctx context.Context, f *cmdutil.Factory, opts electbench.RollingOptions, html string,
	rolling func(context.Context, electbench.RollingOptions) (electbench.RollingResult, error)) error {
	var err error
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
	return cmdutil.PrintResult(f, res.Printed())
}
