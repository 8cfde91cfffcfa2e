package experiments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coordkit/coordkit/chart"
	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/sweep"
)

// The Raft paper's stated numbers for Figure 16 (§9.3, bottom panel).
const (
	PaperMean12ms = 35.0  // ms, election timeout 12–24 ms
	PaperMax12ms  = 152.0 // ms, the longest trial of 12–24 ms
)

// MaxFigure16Trials bounds the trials of one range.
const MaxFigure16Trials = 100000

// ValueError is a value of a config that cannot be read: Field names the
// field as its flag (Figure16Config's timeouts, prevote, trials-at;
// SweepConfig's curve), Value the value as given.
type ValueError struct {
	Field, Value string
	Err          error
}

func (e *ValueError) Error() string { return fmt.Sprintf("%s %q: %v", e.Field, e.Value, e.Err) }
func (e *ValueError) Unwrap() error { return e.Err }

// Figure16Spec is the election sweep of one range of Figure 16: a
// five-node cluster, one-way delay delay, two lagging followers, timeout t
// (hashicorp/raft's [T, 2T)), the pre-vote settings prevote swept, seeds 1
// to trials. Its error says what in the range cannot run (a trial count
// out of 1..MaxFigure16Trials, a point the election experiment refuses).
func Figure16Spec(t string, trials int, prevote []string, delay time.Duration) (sweep.Spec, error) {
	if trials < 1 || trials > MaxFigure16Trials {
		return sweep.Spec{}, fmt.Errorf("%d trials for %s: want 1 to %d", trials, t, MaxFigure16Trials)
	}
	s := sweep.Spec{
		Experiment: "election",
		Params:     []sweep.Param{{Name: "prevote", Values: prevote}},
		Fixed:      map[string]string{"nodes": "5", "delay": delay.String(), "lagging": "2", "timeout": t},
	}
	for i := 1; i <= trials; i++ {
		s.Seeds = append(s.Seeds, int64(i))
	}
	if err := s.Validate(); err != nil {
		return s, err
	}
	for _, p := range s.Grid() {
		if _, err := ElectionConfig(p); err != nil {
			return s, fmt.Errorf("%s: %w", t, err)
		}
	}
	return s, nil
}

// Figure16Config is a run of Figure 16's bottom panel.
type Figure16Config struct {
	// Timeouts are T of each range [T, 2T), as given ("12ms"): they name
	// the trials in the results file.
	Timeouts []string
	// Trials is the number of crashes per range and pre-vote setting;
	// TrialsAt overrides it for some ranges (keys among Timeouts).
	Trials   int
	TrialsAt map[string]int
	// PreVote are the settings, "off" (the paper's Raft) and/or "on".
	PreVote []string
	// Delay is every link's one-way delay.
	Delay time.Duration
	// Results, CSV, ReportOnly, Progress and TTY are as in SweepConfig; SVG
	// receives a CDF per pre-vote setting.
	Results, CSV, SVG string
	ReportOnly        bool
	Progress          io.Writer
	TTY               bool
	// LoadAverage is the load average quoted with the result; nil reads
	// /proc/loadavg ("" off Linux).
	LoadAverage func() string
}

// Specs checks c and returns one spec per range, in the order of
// Timeouts. Errors: a *ValueError for a pre-vote setting other than on or
// off and for a timeout that is not a duration, then Figure16Spec's.
func (c Figure16Config) Specs() ([]sweep.Spec, error) {
	for _, v := range c.PreVote {
		if v != "on" && v != "off" {
			return nil, &ValueError{Field: "prevote", Value: v, Err: errors.New("want on and/or off")}
		}
	}
	var out []sweep.Spec
	for _, t := range c.Timeouts {
		if _, err := time.ParseDuration(t); err != nil {
			return nil, &ValueError{Field: "timeouts", Value: t, Err: err}
		}
		n, ok := c.TrialsAt[t]
		if !ok {
			n = c.Trials
		}
		s, err := Figure16Spec(t, n, c.PreVote, c.Delay)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Validate is Specs without the specs, and ErrNoResults for ReportOnly
// without Results.
func (c Figure16Config) Validate() error {
	if _, err := c.Specs(); err != nil {
		return err
	}
	if c.ReportOnly && c.Results == "" {
		return ErrNoResults
	}
	return nil
}

// ParseTrialsAt reads T=N pairs ("12ms=200") into a TrialsAt map; every T
// must be one of timeouts. Errors: a *ValueError (Field "trials-at", Value
// the pair) for a pair that is not T=N or whose T is not in timeouts.
func ParseTrialsAt(pairs, timeouts []string) (map[string]int, error) {
	out := map[string]int{}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			return nil, &ValueError{Field: "trials-at", Value: kv, Err: errors.New("want T=N, e.g. 12ms=200")}
		}
		if !slices.Contains(timeouts, k) {
			return nil, &ValueError{Field: "trials-at", Value: kv, Err: fmt.Errorf("%s is not one of --timeouts %s", k, strings.Join(timeouts, ","))}
		}
		out[k] = n
	}
	return out, nil
}

// Figure16 runs c's pending trials, range by range, and returns the
// figure: a table per pre-vote setting (one column per range), the paper's
// numbers beside ours, and the load average. It writes c.CSV and c.SVG.
func Figure16(ctx context.Context, c Figure16Config) (Figure16Report, error) {
	specs, err := c.Specs()
	if err != nil {
		return Figure16Report{}, err
	}
	load := c.LoadAverage
	if load == nil {
		load = LoadAverage
	}
	exp, _ := Lookup("election")
	start := time.Now()
	out := Figure16Report{Delay: c.Delay.String(), LoadStart: load()}
	var results []sweep.Result
	for _, spec := range specs {
		run, err := Run(ctx, SweepConfig{Spec: spec, Experiment: exp, Parallel: 1, Results: c.Results, ReportOnly: c.ReportOnly, Progress: c.Progress, TTY: c.TTY})
		if err != nil {
			return out, err
		}
		out.Ran, out.Skipped = out.Ran+run.Ran, out.Skipped+run.Skipped
		results = append(results, run.Results...)
	}
	out.LoadEnd, out.Elapsed = load(), time.Since(start).Round(time.Second).String()
	if c.CSV != "" {
		if err := writeFile(c.CSV, func(w io.Writer) error { return sweep.WriteCSV(w, results) }); err != nil {
			return out, err
		}
	}
	var charts []chart.Chart
	for _, pv := range c.PreVote {
		t, pts, ch := figure16Panel(specs, results, pv, c.Delay)
		out.Tables, out.Points, charts = append(out.Tables, t), append(out.Points, pts...), append(charts, ch)
	}
	out.Tables = append(out.Tables, paperTable(out.Points, c.PreVote))
	if c.SVG != "" {
		if err := writeSVG(c.SVG, charts...); err != nil {
			return out, err
		}
	}
	return out, nil
}

// figure16Panel is one pre-vote setting's table, points and CDF chart: a
// summary per range, each range's spec narrowed to pv.
func figure16Panel(specs []sweep.Spec, results []sweep.Result, pv string, delay time.Duration) (bench.Table, []Figure16Point, chart.Chart) {
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
	t := bench.Table{Title: fmt.Sprintf("Figure 16, pre-vote %s: downtime after the leader's crash (5 nodes, broadcast time about %s)", pv, 2*delay)}
	for _, s := range sums["downtime_ms"] {
		t.Columns = append(t.Columns, RangeLabel(s.Point["timeout"]))
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
	var pts []Figure16Point
	for _, s := range sums[dt] {
		pts = append(pts, Figure16Point{PreVote: pv, Range: RangeLabel(s.Point["timeout"]), Trials: s.N, Errors: s.Errors,
			Mean: finite(s.Mean), P50: finite(s.P50), P90: finite(s.P90), P99: finite(s.P99), Max: finite(s.Max)})
	}
	ch := sweep.CDFChart(fmt.Sprintf("Time without a leader after the leader's crash, pre-vote %s", pv), "time without leader (ms)", relabel(sums[dt]))
	return t, pts, ch
}

// RangeLabel names T's range as the paper does: "12-24ms".
func RangeLabel(t string) string {
	d, err := time.ParseDuration(t)
	if err != nil {
		return t
	}
	return fmt.Sprintf("%s-%s", strings.TrimSuffix(d.String(), "ms"), (2 * d).String())
}

// relabel names each summary by its range, as the figure's legend does.
func relabel(sums []sweep.Summary) []sweep.Summary {
	out := make([]sweep.Summary, len(sums))
	for i, s := range sums {
		s.Label = RangeLabel(s.Point["timeout"]) + " ms"
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
func paperTable(pts []Figure16Point, prevotes []string) bench.Table {
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
	t.Add("downtime mean", "ms", append([]float64{PaperMean12ms}, mean...)...)
	t.Add("downtime max", "ms", append([]float64{PaperMax12ms}, maxv...)...)
	for _, pv := range prevotes {
		t.Ratios = append(t.Ratios, bench.Ratio{Of: "ours, pre-vote " + pv, To: "paper", Plain: true})
	}
	return t
}

// LoadAverage reads the 1, 5 and 15 minute load averages ("" off Linux).
func LoadAverage() string {
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

// Figure16Point is one range and pre-vote setting's downtime, in ms (nil:
// nothing measured).
type Figure16Point struct {
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

// Figure16Report is a finished Figure 16: as text its tables and a line
// with the delay, the trials and the load; as JSON one object.
type Figure16Report struct {
	Delay     string
	LoadStart string
	LoadEnd   string
	Elapsed   string
	Ran       int
	Skipped   int
	Points    []Figure16Point
	Tables    []bench.Table
}

// MarshalJSON writes {"experiment":"figure16","delay","load_start",
// "load_end","elapsed","ran","skipped","points","paper"}.
func (o Figure16Report) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{
		"experiment": "figure16", "delay": o.Delay, "load_start": o.LoadStart, "load_end": o.LoadEnd,
		"elapsed": o.Elapsed, "ran": o.Ran, "skipped": o.Skipped, "points": o.Points,
		"paper": map[string]float64{"mean_ms_12_24": PaperMean12ms, "max_ms_12_24": PaperMax12ms},
	})
}

// WriteText writes the tables and the closing line.
func (o Figure16Report) WriteText(w io.Writer) error {
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
