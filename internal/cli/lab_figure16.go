package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/chart"
	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/sweep"
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

// The Raft paper's stated numbers for Figure 16 (§9.3, bottom panel).
const (
	paperMean12ms = 35.0  // ms, election timeout 12–24 ms
	paperMax12ms  = 152.0 // ms, the longest trial of 12–24 ms
)

func newLabFigure16Cmd(f *factory) *cobra.Command {
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
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := f.NotifyContext(cmd.Context())
			defer cancel()
			return runLabFigure16(ctx, f, opts)
		},
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

// specs returns one spec per range (the ranges may run different numbers
// of trials), in the order of --timeouts.
func (o *labFigure16Options) specs() ([]sweep.Spec, error) {
	trials := map[string]int{}
	for _, kv := range o.TrialsAt {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			return nil, usageErrorf("--trials-at %q: want T=N, e.g. 12ms=200", kv)
		}
		if !slices.Contains(o.Timeouts, k) {
			return nil, usageErrorf("--trials-at %q: %s is not one of --timeouts %s", kv, k, strings.Join(o.Timeouts, ","))
		}
		trials[k] = n
	}
	for _, v := range o.PreVote {
		if v != "on" && v != "off" {
			return nil, usageErrorf("--prevote %q: want on and/or off", v)
		}
	}
	var out []sweep.Spec
	for _, t := range o.Timeouts {
		if _, err := time.ParseDuration(t); err != nil {
			return nil, usageErrorf("--timeouts %q: %v", t, err)
		}
		n, ok := trials[t]
		if !ok {
			n = o.Trials
		}
		if n < 1 || n > 100000 {
			return nil, usageErrorf("%d trials for %s: want 1 to 100000", n, t)
		}
		s := sweep.Spec{
			Experiment: "election",
			Params:     []sweep.Param{{Name: "prevote", Values: o.PreVote}},
			Fixed:      map[string]string{"nodes": "5", "delay": o.Delay.String(), "lagging": "2", "timeout": t},
		}
		for i := 1; i <= n; i++ {
			s.Seeds = append(s.Seeds, int64(i))
		}
		if err := s.Validate(); err != nil {
			return nil, usageErrorf("%v", err)
		}
		for _, p := range s.Grid() {
			if err := sweepExperiments["election"].check(p); err != nil {
				return nil, usageErrorf("%s: %v", t, err)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// rangeLabel names T's range as the paper does: "12-24ms".
func rangeLabel(t string) string {
	d, err := time.ParseDuration(t)
	if err != nil {
		return t
	}
	return fmt.Sprintf("%s-%s", strings.TrimSuffix(d.String(), "ms"), (2 * d).String())
}

func runLabFigure16(ctx context.Context, f *factory, opts *labFigure16Options) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	specs, err := opts.specs()
	if err != nil {
		return err
	}
	if opts.ReportOnly && opts.Results == "" {
		return usageErrorf("--report-only summarises --results FILE: give one")
	}
	load0 := loadAverage()
	start := time.Now()
	out := figure16Output{Delay: opts.Delay.String(), LoadStart: load0}
	var results []sweep.Result
	for _, spec := range specs {
		run, err := runSweep(ctx, f, spec, sweepExperiments["election"], 1, opts.Results, "", opts.ReportOnly)
		if err != nil {
			return err
		}
		out.Ran, out.Skipped = out.Ran+run.Ran, out.Skipped+run.Skipped
		results = append(results, run.Results...)
	}
	out.LoadEnd, out.Elapsed = loadAverage(), time.Since(start).Round(time.Second).String()
	if opts.CSV != "" {
		if err := writeFileWith(opts.CSV, func(w io.Writer) error { return sweep.WriteCSV(w, results) }); err != nil {
			return err
		}
	}
	var charts []chart.Chart
	for _, pv := range opts.PreVote {
		// One summary per range: each range's spec narrowed to pv.
		sums := map[string][]sweep.Summary{}
		for _, spec := range specs {
			sub := spec
			sub.Params = nil
			sub.Fixed = maps.Clone(spec.Fixed)
			sub.Fixed["prevote"] = pv
			for _, m := range []string{"downtime_ms", "elections", "churn", "broadcast_ms", "winner_up_to_date"} {
				sums[m] = append(sums[m], sweep.Summarize(sub, results, m)...)
			}
		}
		t := bench.Table{Title: fmt.Sprintf("Figure 16, pre-vote %s: downtime after the leader's crash (5 nodes, broadcast time about %s)", pv, 2*opts.Delay)}
		for _, s := range sums["downtime_ms"] {
			t.Columns = append(t.Columns, rangeLabel(s.Point["timeout"]))
		}
		row := func(name, unit, m string, fn func(sweep.Summary) float64) {
			var vs []float64
			for _, s := range sums[m] {
				vs = append(vs, fn(s))
			}
			t.Add(name, unit, vs...)
		}
		dt := "downtime_ms"
		row("trials", "", dt, func(s sweep.Summary) float64 { return float64(s.N) })
		row("not measured (no stable leader)", "", dt, func(s sweep.Summary) float64 { return float64(s.Errors) })
		row("downtime mean", "ms", dt, func(s sweep.Summary) float64 { return s.Mean })
		row("downtime p50", "ms", dt, func(s sweep.Summary) float64 { return s.P50 })
		row("downtime p90", "ms", dt, func(s sweep.Summary) float64 { return s.P90 })
		row("downtime p99", "ms", dt, func(s sweep.Summary) float64 { return s.P99 })
		row("downtime max", "ms", dt, func(s sweep.Summary) float64 { return s.Max })
		row("downtime min", "ms", dt, func(s sweep.Summary) float64 { return s.Min })
		row("terms per election mean", "", "elections", func(s sweep.Summary) float64 { return s.Mean })
		row("terms per election max", "", "elections", func(s sweep.Summary) float64 { return s.Max })
		row("unprompted leader changes", "", "churn", func(s sweep.Summary) float64 { return sum(s.Values) })
		row("broadcast time p50", "ms", "broadcast_ms", func(s sweep.Summary) float64 { return s.P50 })
		row("winner had the last entry", "share", "winner_up_to_date", func(s sweep.Summary) float64 { return s.Mean })
		out.Tables = append(out.Tables, t)
		for _, s := range sums[dt] {
			out.Points = append(out.Points, figure16Point{PreVote: pv, Range: rangeLabel(s.Point["timeout"]), Trials: s.N, Errors: s.Errors,
				Mean: finite(s.Mean), P50: finite(s.P50), P90: finite(s.P90), P99: finite(s.P99), Max: finite(s.Max)})
		}
		c := sweep.CDFChart(fmt.Sprintf("Time without a leader after the leader's crash, pre-vote %s", pv), "time without leader (ms)", relabel(sums[dt]))
		charts = append(charts, c)
	}
	out.Tables = append(out.Tables, paperTable(out.Points, opts.PreVote))
	if opts.SVG != "" {
		if err := writeFileWith(opts.SVG, func(w io.Writer) error { return sweep.WriteSVG(w, charts...) }); err != nil {
			return err
		}
	}
	return p.Print(out)
}

// relabel names each summary by its range, as the figure's legend does.
func relabel(sums []sweep.Summary) []sweep.Summary {
	out := make([]sweep.Summary, len(sums))
	for i, s := range sums {
		s.Label = rangeLabel(s.Point["timeout"]) + " ms"
		out[i] = s
	}
	return out
}

func sum(vs []float64) float64 {
	var t float64
	for _, v := range vs {
		t += v
	}
	return t
}

// paperTable puts the paper's stated numbers beside ours for 12-24 ms.
func paperTable(pts []figure16Point, prevotes []string) bench.Table {
	t := bench.Table{Title: "The paper's stated numbers beside ours (election timeout 12-24 ms)", Columns: []string{"paper"}}
	var mean, maxv []float64
	for _, pv := range prevotes {
		t.Columns = append(t.Columns, "ours, pre-vote "+pv)
		m, x := math.NaN(), math.NaN()
		for _, p := range pts {
			if p.PreVote == pv && p.Range == "12-24ms" {
				if p.Mean != nil {
					m = *p.Mean
				}
				if p.Max != nil {
					x = *p.Max
				}
			}
		}
		mean, maxv = append(mean, m), append(maxv, x)
	}
	t.Add("downtime mean", "ms", append([]float64{paperMean12ms}, mean...)...)
	t.Add("downtime max", "ms", append([]float64{paperMax12ms}, maxv...)...)
	for _, pv := range prevotes {
		t.Ratios = append(t.Ratios, bench.Ratio{Of: "ours, pre-vote " + pv, To: "paper", Plain: true})
	}
	return t
}

// loadAverage reads the 1, 5 and 15 minute load averages ("" off Linux).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

type figure16Point struct {
	PreVote string   `json:"prevote"`
	Range   string   `json:"range"`
	Trials  int      `json:"trials"`
	Errors  int      `json:"errors"`
	Mean    *float64 `json:"mean_ms"`
	P50     *float64 `json:"p50_ms"`
	P90     *float64 `json:"p90_ms"`
	P99     *float64 `json:"p99_ms"`
	Max     *float64 `json:"max_ms"`
}

type figure16Output struct {
	Delay     string
	LoadStart string
	LoadEnd   string
	Elapsed   string
	Ran       int
	Skipped   int
	Points    []figure16Point
	Tables    []bench.Table
}

func (o figure16Output) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{
		"experiment": "figure16", "delay": o.Delay, "load_start": o.LoadStart, "load_end": o.LoadEnd,
		"elapsed": o.Elapsed, "ran": o.Ran, "skipped": o.Skipped, "points": o.Points,
		"paper": map[string]float64{"mean_ms_12_24": paperMean12ms, "max_ms_12_24": paperMax12ms},
	})
}

func (o figure16Output) WriteSimple(w io.Writer) error {
	for i, t := range o.Tables {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := bench.WriteTable(w, t); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "\nlink delay %s one way; %d trials run now, %d from the results file, in %s; load average %s at the start, %s at the end (2 shared cores: a loaded machine delays timers and deliveries, which lengthens downtimes)\n",
		o.Delay, o.Ran, o.Skipped, o.Elapsed, orDash(o.LoadStart), orDash(o.LoadEnd))
	return err
}
