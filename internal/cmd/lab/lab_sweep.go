package lab

import (
	"context"
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/sweep"
	"github.com/coordkit/coordkit/internal/sweep/experiments"
)

type labSweepOptions struct {
	Spec string
	// Flags are --experiment, --param, --set and --seeds, without --spec.
	sweep.Flags
	Parallel   int
	Results    string
	CSV        string
	SVG        string
	Metric     string
	Curve      string
	ReportOnly bool
}

func newLabSweepCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &labSweepOptions{}
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Run an experiment over a grid of parameters × values × seeds",
		Long: `Run one experiment many times: every combination of the swept parameters'
values (the grid; the first --param varies slowest), each with every seed.
Trials of one point run one after the other on one fixture (for election,
one cluster whose leader is crashed once per seed).

Experiments and their parameters (defaults in brackets):
  election   the Raft paper's Figure 16 trial: crash the leader, time until
             every survivor names the same new leader (metric downtime_ms).
             nodes [5], timeout [150ms] (T: raft draws timers from [T,2T)),
             delay [7.5ms] (one way: broadcast time about twice it),
             prevote [on|off, on], lagging [2] (followers missing the last
             entry), settle [2T]
  scenario   a scenario of 'coordctl scenario list' per seed: name (required),
             scale [small]; metrics are the report's, plus claims_failed
  lock-safety, election-safety
             'coordctl check' per seed, each on a fresh three-member etcd:
             fencing [on|off, on], fence-first [on|off, on], duration [20s],
             clients [5], ttl [2s], kind (lock-safety: mutex, rwmutex,
             semaphore); in-process clients only. Metrics lost_updates
             (default), overlapping_holders, violations, faults,
             effective_faults, acquisitions, writes, passed, failed

--parallel runs that many points at once. It defaults to 1 because trials
in parallel share the CPUs: on this kind of experiment (timeouts of tens
of milliseconds) a busier machine delays timers and deliveries, and the
measured downtime grows with it. Raise it only for results that do not
depend on timing.

--results FILE appends one JSON line per finished trial; a rerun with the
same file skips every trial already measured (an errored trial runs again),
so an interrupted sweep resumes. --csv writes every result as CSV at the end.
The summary is printed as the benchmarks' table: one column per point, rows
trials, errors, mean, p50, p90, p99, max of --metric. --svg draws a CDF per
point, or with --curve PARAM the percentiles against that numeric parameter.
Progress, with an estimate of the time left, goes to stderr.

A spec file holds the same in lines:
  experiment election
  param timeout 12ms,25ms,50ms,100ms,150ms
  param prevote off,on
  set delay 7.5ms
  seeds 1..100`,
		Example: `  coordctl lab sweep --experiment election --param timeout=50ms,150ms --seeds 1..20
  coordctl lab sweep --spec fig.spec --results fig.jsonl --svg fig.svg --csv fig.csv
  coordctl lab sweep --experiment election --param timeout=25ms,50ms,100ms --seeds 1..50 --curve timeout --svg curve.svg
  coordctl lab sweep --experiment scenario --set name=stale-read --seeds 1..5 --metric stale_reads
  coordctl lab sweep --experiment lock-safety --param fencing=on,off --set duration=20s --seeds 1..5 --results chk.jsonl`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, _ *cobra.Command, _ []string) error {
			return runLabSweep(ctx, f, opts)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Spec, "spec", "", "read the experiment, parameters and seeds from this file")
	fl.StringVar(&opts.Experiment, "experiment", "", "experiment to run: election, scenario, lock-safety or election-safety")
	fl.StringArrayVar(&opts.Params, "param", nil, "a swept parameter and its values, name=v1,v2 (repeatable)")
	fl.StringArrayVar(&opts.Sets, "set", nil, "a parameter held fixed, name=value (repeatable)")
	fl.StringVar(&opts.Seeds, "seeds", "", "seeds of every point: A..B or a list 1,2,3 (default 1..10)")
	fl.IntVar(&opts.Parallel, "parallel", 1, "points run at once (1 keeps timing honest)")
	fl.StringVar(&opts.Results, "results", "", "append results here as JSON lines and skip trials it already holds")
	fl.StringVar(&opts.CSV, "csv", "", "write every result to this CSV file")
	fl.StringVar(&opts.SVG, "svg", "", "draw the results to this SVG file")
	fl.StringVar(&opts.Metric, "metric", "", "metric summarised and drawn (default: the experiment's, downtime_ms for election)")
	fl.BoolVar(&opts.ReportOnly, "report-only", false, "run nothing: summarise and draw what --results holds")
	fl.StringVar(&opts.Curve, "curve", "", "with --svg: percentiles against this numeric parameter instead of CDFs")
	return cmd
}

// spec builds the sweep's spec from the file or the flags.
func (o *labSweepOptions) spec() (sweep.Spec, error) {
	var s sweep.Spec
	if o.Spec != "" {
		if o.Experiment != "" || len(o.Params) > 0 || len(o.Sets) > 0 || o.Seeds != "" {
			return s, cmdutil.UsageErrorf("--spec: give the experiment, parameters and seeds in the file, not also as flags")
		}
		fh, err := os.Open(o.Spec)
		if err != nil {
			return s, cmdutil.UsageErrorf("--spec: %v", err)
		}
		defer fh.Close()
		if s, err = sweep.ParseSpec(fh); err != nil {
			return s, cmdutil.UsageErrorf("--spec %s: %v", o.Spec, err)
		}
		return s, nil
	}
	s, err := o.Flags.Spec()
	var fe *sweep.FlagError
	if errors.As(err, &fe) {
		return s, cmdutil.UsageErrorf("--%v", fe)
	} else if err != nil {
		return s, cmdutil.UsageErrorf("%v", err)
	}
	return s, nil
}

// config is the sweep's config: the spec, its experiment and the flags.
func (o *labSweepOptions) config(f *cmdutil.Factory) (experiments.SweepConfig, error) {
	spec, err := o.spec()
	if err != nil {
		return experiments.SweepConfig{}, err
	}
	exp, err := experiments.Lookup(spec.Experiment)
	if err != nil {
		return experiments.SweepConfig{}, cmdutil.UsageErrorf("%v", err)
	}
	cfg := experiments.SweepConfig{Spec: spec, Experiment: exp, Parallel: o.Parallel, Results: o.Results, CSV: o.CSV,
		ReportOnly: o.ReportOnly, Metric: o.Metric, SVG: o.SVG, Curve: o.Curve, Progress: f.IO.ErrOut, TTY: cmdutil.IsTerminal(f.IO.ErrOut)}
	err = cfg.Validate()
	if errors.Is(err, experiments.ErrParallel) {
		return cfg, cmdutil.UsageErrorf("--parallel %d: want at least 1", o.Parallel)
	}
	return cfg, experimentsUsage(err)
}

// experimentsUsage is the usage error, naming the flag, of a sweep's or
// Figure 16's invalid config; nil for nil.
func experimentsUsage(err error) error {
	var ve *experiments.ValueError
	switch {
	case errors.As(err, &ve):
		return cmdutil.UsageErrorf("--%s %q: %v", ve.Field, ve.Value, ve.Err)
	case errors.Is(err, experiments.ErrCurveNeedsSVG):
		return cmdutil.UsageErrorf("--curve draws into --svg: give --svg FILE")
	case errors.Is(err, experiments.ErrNoResults):
		return cmdutil.UsageErrorf("--report-only summarises --results FILE: give one")
	case err != nil:
		return cmdutil.UsageErrorf("%v", err)
	}
	return nil
}

func runLabSweep(ctx context.Context, f *cmdutil.Factory, opts *labSweepOptions) error {
	cfg, err := opts.config(f)
	if err != nil {
		return err
	}
	rep, err := experiments.Sweep(ctx, cfg)
	switch {
	case errors.Is(err, experiments.ErrInterrupted):
		return cmdutil.Mark(cmdutil.ErrFailed, err)
	case errors.Is(err, sweep.ErrNotNumeric):
		return cmdutil.UsageErrorf("--curve: %v", err)
	case err != nil:
		return err
	}
	return cmdutil.PrintResult(f, cmdutil.TextOutput{V: rep})
}
