package lab

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/sweep/experiments"
)

type labFigure16Options struct {
	Trials     int
	TrialsAt   []string
	ReportOnly bool
	Timeouts   []string
	PreVote    []string
	Delay      time.Duration
	Results    string
	CSV        string
	SVG        string
}

func newLabFigure16Cmd(f *cmdutil.Factory) *cobra.Command {
	opts := &labFigure16Options{}
	cmd := &cobra.Command{
		Use:   "figure16",
		Short: "The Raft paper's Figure 16: time to elect a leader after the leader crashes",
		Long: `Reproduce the bottom panel of Figure 16 of the Raft paper (Ongaro and
Ousterhout, USENIX ATC 2014, section 9.3) in the lab: a five-node cluster
with a broadcast time of about 15 ms (--delay one way), its leader crashed
--trials times per election-timeout range, and the time from the crash until
every surviving node names the same new leader.

Each trial: wait until all five nodes agree on a leader for 2T; make two
followers (chosen by the seed) lag — they keep hearing heartbeats but miss
the next entry, so they cannot win (the paper's worst case, "different log
lengths"); commit one entry through the others (the paper's synchronised
broadcast before the crash); crash the leader at a point drawn uniformly
from [0, T/10), hashicorp/raft's heartbeat interval; restart it once the
survivors agree. hashicorp/raft draws its timers from [T, 2T), so a range
"12-24ms" is T = 12ms. The paper's top panel (150-150, 150-151, 150-155,
150-175, 150-200 ms) needs a narrower randomisation than [T, 2T): it cannot
be set without patching the library, so it is not reproduced.

Prints a table per pre-vote setting (one column per range), the paper's
stated numbers beside ours, and the load average, which moves the result:
see docs/lab.md, "Figure 16", for every difference in method. --results
makes the run resumable (see 'coordctl lab sweep').`,
		Example: `  coordctl lab figure16
  coordctl lab figure16 --trials 1000 --results fig16.jsonl --svg docs/figure16.svg
  coordctl lab figure16 --timeouts 150ms --prevote off --trials 50 -w json`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, _ *cobra.Command, _ []string) error {
			return runLabFigure16(ctx, f, opts)
		}),
	}
	fl := cmd.Flags()
	fl.IntVar(&opts.Trials, "trials", 20, "crashes per range and pre-vote setting (the paper: 1000)")
	fl.BoolVar(&opts.ReportOnly, "report-only", false, "run nothing: print and draw what --results holds")
	fl.StringArrayVar(&opts.TrialsAt, "trials-at", nil, "another number of trials for one range, T=N (e.g. 12ms=200; repeatable)")
	fl.StringSliceVar(&opts.Timeouts, "timeouts", []string{"12ms", "25ms", "50ms", "100ms", "150ms"}, "T of each range [T, 2T)")
	fl.StringSliceVar(&opts.PreVote, "prevote", []string{"off", "on"}, "pre-vote settings: off (the paper's Raft) and/or on (hashicorp/raft's default)")
	fl.DurationVar(&opts.Delay, "delay", 7500*time.Microsecond, "one-way delay of every link (broadcast time about twice it)")
	fl.StringVar(&opts.Results, "results", "", "append results here as JSON lines and skip trials it already holds")
	fl.StringVar(&opts.CSV, "csv", "", "write every trial to this CSV file")
	fl.StringVar(&opts.SVG, "svg", "", "draw the CDFs, as the figure does, to this SVG file")
	return cmd
}

// config is the run's config; --trials-at's T=N pairs become TrialsAt.
func (o *labFigure16Options) config(f *cmdutil.Factory) (experiments.Figure16Config, error) {
	cfg := experiments.Figure16Config{Timeouts: o.Timeouts, Trials: o.Trials, PreVote: o.PreVote, Delay: o.Delay,
		Results: o.Results, CSV: o.CSV, SVG: o.SVG, ReportOnly: o.ReportOnly, Progress: f.IO.ErrOut, TTY: cmdutil.IsTerminal(f.IO.ErrOut)}
	trialsAt, err := experiments.ParseTrialsAt(o.TrialsAt, o.Timeouts)
	if err == nil {
		cfg.TrialsAt = trialsAt
		err = cfg.Validate()
	}
	return cfg, experimentsUsage(err)
}

func runLabFigure16(ctx context.Context, f *cmdutil.Factory, opts *labFigure16Options) error {
	cfg, err := opts.config(f)
	if err != nil {
		return err
	}
	rep, err := experiments.Figure16(ctx, cfg)
	if errors.Is(err, experiments.ErrInterrupted) {
		return cmdutil.Mark(cmdutil.ErrFailed, err)
	} else if err != nil {
		return err
	}
	return cmdutil.PrintResult(f, cmdutil.TextOutput{V: rep})
}
