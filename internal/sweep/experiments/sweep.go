package experiments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/coordkit/coordkit/chart"
	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/sweep"
)

// SweepConfig is one sweep of one experiment.
type SweepConfig struct {
	Spec       sweep.Spec
	Experiment Experiment
	// Parallel is how many points run at once, at least 1 (timing is only
	// honest at 1).
	Parallel int
	// Results, if set, is the resumable results file: read first (its
	// measured trials are skipped), then appended one JSON line per trial.
	Results string
	// CSV, if set, receives every result at the end.
	CSV string
	// ReportOnly runs nothing: it summarises what Results holds.
	ReportOnly bool
	// Metric is summarised and drawn; empty: the experiment's.
	Metric string
	// SVG, if set, receives a CDF per point or, with Curve (a swept
	// parameter), the percentiles against that parameter.
	SVG, Curve string
	// Progress receives the progress line (stderr); nil: none. TTY says
	// whether it is a terminal (the line then redraws itself).
	Progress io.Writer
	TTY      bool
}

// Validate checks Curve (a *ValueError, Field "curve", when it is not a
// swept parameter; ErrCurveNeedsSVG without SVG), ReportOnly
// (ErrNoResults without Results), the spec against the experiment
// (*ParamError), Parallel (ErrParallel) and every point of the grid
// (errors wrapping sweep.ErrSpec or the experiment's config errors), in
// that order.
func (c SweepConfig) Validate() error {
	switch {
	case c.Curve != "" && !slices.ContainsFunc(c.Spec.Params, func(p sweep.Param) bool { return p.Name == c.Curve }):
		return &ValueError{Field: "curve", Value: c.Curve, Err: errors.New("not a swept parameter")}
	case c.Curve != "" && c.SVG == "":
		return ErrCurveNeedsSVG
	case c.ReportOnly && c.Results == "":
		return ErrNoResults
	}
	if err := c.Experiment.CheckParams(c.Spec); err != nil {
		return err
	}
	if c.Parallel < 1 {
		return fmt.Errorf("%w: %d", ErrParallel, c.Parallel)
	}
	return c.Experiment.CheckPoints(c.Spec)
}

// Outcome is a finished sweep: the latest result of every trial of its spec.
type Outcome struct {
	Spec    sweep.Spec
	Results []sweep.Result
	Ran     int // trials this sweep ran
	Skipped int // trials the results file already held
}

// InterruptedError is a sweep cut short by its context.
type InterruptedError struct {
	Experiment string
	Ran        int
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("sweep %s: interrupted after %d trials (rerun with the same --results to resume)", e.Experiment, e.Ran)
}

// Unwrap returns ErrInterrupted.
func (e *InterruptedError) Unwrap() error { return ErrInterrupted }

// Run runs the pending trials of c (none with ReportOnly), resuming from
// c.Results, and writes c.CSV. It does not call Validate. It returns an
// *InterruptedError when ctx ends first.
func Run(ctx context.Context, c SweepConfig) (Outcome, error) {
	out := Outcome{Spec: c.Spec}
	var old []sweep.Result
	var results io.Writer
	if c.Results != "" {
		if b, err := os.Open(c.Results); err == nil {
			old, err = sweep.ReadResults(b)
			b.Close()
			if err != nil {
				return out, fmt.Errorf("--results %s: %w", c.Results, err)
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return out, err
		}
		fh, err := os.OpenFile(c.Results, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return out, err
		}
		defer fh.Close()
		results = fh
	}
	pending := sweep.Pending(c.Spec, old)
	out.Skipped = len(c.Spec.Trials()) - len(pending)
	if c.ReportOnly {
		pending = nil
	}
	exp, err := c.Experiment.Open()
	if err != nil {
		return out, err
	}
	progress := c.Progress
	if progress == nil {
		progress = io.Discard
	}
	name := c.Spec.Experiment
	if out.Skipped > 0 && !c.ReportOnly {
		fmt.Fprintf(progress, "sweep %s: %d of %d trials already in %s, running %d\n", name, out.Skipped, out.Skipped+len(pending), c.Results, len(pending))
	}
	prog := sweep.NewProgress(progress, c.TTY, "sweep "+name, len(pending), nil)
	res, err := sweep.Run(ctx, name, exp, pending, sweep.Options{Parallel: c.Parallel, Results: results, Progress: prog})
	out.Ran = len(res)
	out.Results = sweep.Latest(c.Spec, append(old, res...))
	if err != nil {
		if ctx.Err() != nil {
			return out, &InterruptedError{Experiment: name, Ran: out.Ran}
		}
		return out, err
	}
	if c.CSV != "" {
		if err := writeFile(c.CSV, func(w io.Writer) error { return sweep.WriteCSV(w, out.Results) }); err != nil {
			return out, err
		}
	}
	return out, nil
}

// Sweep runs c (Run), summarises c.Metric per point and draws c.SVG. An
// error wrapping sweep.ErrNotNumeric means c.Curve's values are not
// numbers; the trials ran and are in the results file.
func Sweep(ctx context.Context, c SweepConfig) (Report, error) {
	if c.Metric == "" {
		c.Metric = c.Experiment.Metric
	}
	out, err := Run(ctx, c)
	if err != nil {
		return Report{}, err
	}
	sums := sweep.Summarize(c.Spec, out.Results, c.Metric)
	if c.SVG != "" {
		title := fmt.Sprintf("%s: %s", c.Spec.Experiment, c.Metric)
		ch := sweep.CDFChart(title, c.Metric, sums)
		if c.Curve != "" {
			if ch, err = sweep.PercentileChart(title+" against "+c.Curve, c.Metric, c.Spec, c.Curve, sums); err != nil {
				return Report{}, err
			}
		}
		if err := writeSVG(c.SVG, ch); err != nil {
			return Report{}, err
		}
	}
	from := c.Results
	if from == "" {
		from = "no results file"
	}
	title := fmt.Sprintf("sweep %s: %d points x %d seeds (%d run now, %d from %s)", c.Spec.Experiment, len(c.Spec.Grid()), len(c.Spec.Seeds), out.Ran, out.Skipped, from)
	return Report{Outcome: out, Metric: c.Metric, Summaries: sums, Table: sweep.Table(title, c.Metric, c.Experiment.Unit, sums)}, nil
}

// Report is a summarised sweep: as text the benchmarks' table; as JSON one
// object with the experiment, the metric and a summary per point.
type Report struct {
	Outcome
	Metric    string
	Summaries []sweep.Summary
	Table     bench.Table
}

type pointJSON struct {
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

// MarshalJSON writes {"experiment","metric","seeds","ran","skipped","points"}.
func (r Report) MarshalJSON() ([]byte, error) {
	pts := make([]pointJSON, 0, len(r.Summaries))
	for _, s := range r.Summaries {
		pts = append(pts, pointJSON{Label: s.Label, Point: s.Point, N: s.N, Errors: s.Errors,
			Mean: finite(s.Mean), P50: finite(s.P50), P90: finite(s.P90), P99: finite(s.P99), Max: finite(s.Max)})
	}
	return json.Marshal(map[string]any{
		"experiment": r.Spec.Experiment, "metric": r.Metric, "seeds": len(r.Spec.Seeds),
		"ran": r.Ran, "skipped": r.Skipped, "points": pts,
	})
}

// WriteText writes the table.
func (r Report) WriteText(w io.Writer) error { return bench.WriteTable(w, r.Table) }

// finite is v, or nil (JSON null) for NaN: nothing measured.
func finite(v float64) *float64 {
	if v != v {
		return nil
	}
	return &v
}

// writeSVG draws the charts, stacked, to the file path.
func writeSVG(path string, charts ...chart.Chart) error {
	return writeFile(path, func(w io.Writer) error { return sweep.WriteSVG(w, charts...) })
}

// writeFile creates path and writes it with fn.
func writeFile(path string, fn func(io.Writer) error) error {
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
