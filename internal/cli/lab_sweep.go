package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/chzyer/readline"
	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/sweep"
)

type labSweepOptions struct {
	Spec       string
	Experiment string
	Params     []string
	Sets       []string
	Seeds      string
	Parallel   int
	Results    string
	CSV        string
	SVG        string
	Metric     string
	Curve      string
	ReportOnly bool
}

func newLabSweepCmd(f *factory) *cobra.Command {
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
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := f.NotifyContext(cmd.Context())
			defer cancel()
			return runLabSweep(ctx, f, opts)
		},
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
			return s, usageErrorf("--spec: give the experiment, parameters and seeds in the file, not also as flags")
		}
		fh, err := os.Open(o.Spec)
		if err != nil {
			return s, usageErrorf("--spec: %v", err)
		}
		defer fh.Close()
		if s, err = sweep.ParseSpec(fh); err != nil {
			return s, usageErrorf("--spec %s: %v", o.Spec, err)
		}
		return s, nil
	}
	s = sweep.Spec{Experiment: o.Experiment, Fixed: map[string]string{}}
	for _, p := range o.Params {
		pr, err := sweep.ParseParam(p)
		if err != nil {
			return s, usageErrorf("--param: %v", err)
		}
		s.Params = append(s.Params, pr)
	}
	for _, kv := range o.Sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			return s, usageErrorf("--set %q: want name=value", kv)
		}
		s.Fixed[k] = v
	}
	seeds := o.Seeds
	if seeds == "" {
		seeds = "1..10"
	}
	sd, err := sweep.ParseSeeds(seeds)
	if err != nil {
		return s, usageErrorf("--seeds: %v", err)
	}
	s.Seeds = sd
	if err := s.Validate(); err != nil {
		return s, usageErrorf("%v", err)
	}
	return s, nil
}

// sweepRun is a finished sweep: every result of its spec.
type sweepRun struct {
	Spec    sweep.Spec
	Results []sweep.Result
	Ran     int // trials this invocation ran
	Skipped int // trials the results file already held
}

// runSweep runs spec's pending trials (resuming from resultsPath when
// given) and writes the CSV; the caller prints.
func runSweep(ctx context.Context, f *factory, spec sweep.Spec, exp sweepExperiment, parallel int, resultsPath, csvPath string, reportOnly bool) (sweepRun, error) {
	run := sweepRun{Spec: spec}
	for _, p := range spec.Params {
		if !slices.Contains(exp.params, p.Name) {
			return run, usageErrorf("experiment %s has no parameter %q (it has %s)", spec.Experiment, p.Name, strings.Join(exp.params, ", "))
		}
	}
	for k := range spec.Fixed {
		if !slices.Contains(exp.params, k) {
			return run, usageErrorf("experiment %s has no parameter %q (it has %s)", spec.Experiment, k, strings.Join(exp.params, ", "))
		}
	}
	if parallel < 1 {
		return run, usageErrorf("--parallel %d: want at least 1", parallel)
	}
	if exp.check != nil {
		for _, p := range spec.Grid() {
			if err := exp.check(p); err != nil {
				return run, usageErrorf("%s: %v", spec.Label(p), err)
			}
		}
	}
	var old []sweep.Result
	var out io.Writer
	if resultsPath != "" {
		if b, err := os.Open(resultsPath); err == nil {
			old, err = sweep.ReadResults(b)
			b.Close()
			if err != nil {
				return run, fmt.Errorf("--results %s: %w", resultsPath, err)
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return run, err
		}
		fh, err := os.OpenFile(resultsPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return run, err
		}
		defer fh.Close()
		out = fh
	}
	pending := sweep.Pending(spec, old)
	run.Skipped = len(spec.Trials()) - len(pending)
	if reportOnly {
		pending = nil
	}
	e, err := exp.open(f)
	if err != nil {
		return run, err
	}
	tty := false
	if fh, ok := f.IO.ErrOut.(*os.File); ok {
		tty = readline.IsTerminal(int(fh.Fd()))
	}
	if run.Skipped > 0 && !reportOnly {
		fmt.Fprintf(f.IO.ErrOut, "sweep %s: %d of %d trials already in %s, running %d\n", spec.Experiment, run.Skipped, run.Skipped+len(pending), resultsPath, len(pending))
	}
	prog := sweep.NewProgress(f.IO.ErrOut, tty, "sweep "+spec.Experiment, len(pending), nil)
	res, err := sweep.Run(ctx, spec.Experiment, e, pending, sweep.Options{Parallel: parallel, Results: out, Progress: prog})
	run.Ran = len(res)
	run.Results = sweep.Latest(spec, append(old, res...))
	if err != nil {
		if ctx.Err() != nil {
			return run, mark(errFailed, fmt.Errorf("sweep %s: interrupted after %d trials (rerun with the same --results to resume)", spec.Experiment, run.Ran))
		}
		return run, err
	}
	if csvPath != "" {
		fh, err := os.Create(csvPath)
		if err != nil {
			return run, err
		}
		if err := sweep.WriteCSV(fh, run.Results); err != nil {
			fh.Close()
			return run, err
		}
		if err := fh.Close(); err != nil {
			return run, err
		}
	}
	return run, nil
}

func runLabSweep(ctx context.Context, f *factory, opts *labSweepOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	spec, err := opts.spec()
	if err != nil {
		return err
	}
	exp, ok := sweepExperiments[spec.Experiment]
	if !ok {
		return usageErrorf("unknown experiment %q: want %s", spec.Experiment, strings.Join(sweepExperimentNames(), " or "))
	}
	metric := opts.Metric
	if metric == "" {
		metric = exp.metric
	}
	if opts.Curve != "" && !slices.ContainsFunc(spec.Params, func(p sweep.Param) bool { return p.Name == opts.Curve }) {
		return usageErrorf("--curve %q: not a swept parameter", opts.Curve)
	}
	if opts.Curve != "" && opts.SVG == "" {
		return usageErrorf("--curve draws into --svg: give --svg FILE")
	}
	if opts.ReportOnly && opts.Results == "" {
		return usageErrorf("--report-only summarises --results FILE: give one")
	}
	run, err := runSweep(ctx, f, spec, exp, opts.Parallel, opts.Results, opts.CSV, opts.ReportOnly)
	if err != nil {
		return err
	}
	sums := sweep.Summarize(spec, run.Results, metric)
	if opts.SVG != "" {
		title := fmt.Sprintf("%s: %s", spec.Experiment, metric)
		c := sweep.CDFChart(title, metric, sums)
		if opts.Curve != "" {
			if c, err = sweep.PercentileChart(title+" against "+opts.Curve, metric, spec, opts.Curve, sums); err != nil {
				return usageErrorf("--curve: %v", err)
			}
		}
		if err := writeFileWith(opts.SVG, func(w io.Writer) error { return sweep.WriteSVG(w, c) }); err != nil {
			return err
		}
	}
	title := fmt.Sprintf("sweep %s: %d points x %d seeds (%d run now, %d from %s)", spec.Experiment, len(spec.Grid()), len(spec.Seeds), run.Ran, run.Skipped, orNone(opts.Results))
	return p.Print(sweepOutput{run: run, metric: metric, table: sweep.Table(title, metric, exp.unit, sums), sums: sums})
}

func orNone(s string) string {
	if s == "" {
		return "no results file"
	}
	return s
}

func sweepExperimentNames() []string {
	var out []string
	for k := range sweepExperiments {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// writeFileWith creates path and writes it with fn.
func writeFileWith(path string, fn func(io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(fh); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// sweepOutput prints a sweep: the table as text; as JSON one object with
// the spec, the metric and a summary per point.
type sweepOutput struct {
	run    sweepRun
	metric string
	table  bench.Table
	sums   []sweep.Summary
}

type sweepPointJSON struct {
	Label  string      `json:"label"`
	Point  sweep.Point `json:"point"`
	N      int         `json:"trials"`
	Errors int         `json:"errors"`
	Mean   *float64    `json:"mean"`
	P50    *float64    `json:"p50"`
	P90    *float64    `json:"p90"`
	P99    *float64    `json:"p99"`
	Max    *float64    `json:"max"`
}

func finite(v float64) *float64 {
	if v != v { // NaN: nothing measured
		return nil
	}
	return &v
}

func (o sweepOutput) MarshalJSON() ([]byte, error) {
	pts := make([]sweepPointJSON, 0, len(o.sums))
	for _, s := range o.sums {
		pts = append(pts, sweepPointJSON{Label: s.Label, Point: s.Point, N: s.N, Errors: s.Errors,
			Mean: finite(s.Mean), P50: finite(s.P50), P90: finite(s.P90), P99: finite(s.P99), Max: finite(s.Max)})
	}
	return json.Marshal(map[string]any{
		"experiment": o.run.Spec.Experiment, "metric": o.metric, "seeds": len(o.run.Spec.Seeds),
		"ran": o.run.Ran, "skipped": o.run.Skipped, "points": pts,
	})
}

func (o sweepOutput) WriteSimple(w io.Writer) error { return bench.WriteTable(w, o.table) }
