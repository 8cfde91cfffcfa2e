package sweep

import (
	"math"
	"slices"

	"github.com/coordkit/coordkit/internal/bench"
)

// Summary is one point's distribution of one metric.
type Summary struct {
	Point                         Point
	Label                         string
	N                             int // trials that measured the metric
	Errors                        int // trials that could not measure
	Mean, P50, P90, P99, Max, Min float64
	// Values are the measurements, sorted.
	Values []float64
}

// Quantile is the nearest-rank p-quantile of sorted values (the module's
// one definition, cluster.Percentile, on floats); NaN for none.
func Quantile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	rank := int(math.Ceil(p * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Summarize returns metric's distribution per point of s, in grid order,
// over the latest result of each trial.
func Summarize(s Spec, results []Result, metric string) []Summary {
	by := map[string]*Summary{}
	var out []*Summary
	for _, p := range s.Grid() {
		sm := &Summary{Point: p, Label: s.Label(p)}
		by[p.Key()] = sm
		out = append(out, sm)
	}
	for _, r := range Latest(s, results) {
		sm := by[r.Point.Key()]
		if sm == nil {
			continue
		}
		if r.Error != "" {
			sm.Errors++
			continue
		}
		if v, ok := r.Metrics[metric]; ok && !math.IsNaN(v) {
			sm.Values = append(sm.Values, v)
		}
	}
	res := make([]Summary, len(out))
	for i, sm := range out {
		slices.Sort(sm.Values)
		sm.N = len(sm.Values)
		sm.Mean, sm.Min = math.NaN(), math.NaN()
		if sm.N > 0 {
			var sum float64
			for _, v := range sm.Values {
				sum += v
			}
			sm.Mean, sm.Min = sum/float64(sm.N), sm.Values[0]
		}
		sm.P50, sm.P90, sm.P99 = Quantile(sm.Values, 0.5), Quantile(sm.Values, 0.9), Quantile(sm.Values, 0.99)
		sm.Max = Quantile(sm.Values, 1)
		res[i] = *sm
	}
	return res
}

// Table is the summaries in the benchmarks' table layout: one column per
// point, rows trials, errors, mean, p50, p90, p99 and max of metric.
func Table(title, metric, unit string, sums []Summary) bench.Table {
	t := bench.Table{Title: title}
	for _, s := range sums {
		t.Columns = append(t.Columns, s.Label)
	}
	row := func(name, u string, f func(Summary) float64) {
		vs := make([]float64, len(sums))
		for i, s := range sums {
			vs[i] = f(s)
		}
		t.Add(name, u, vs...)
	}
	row("trials", "", func(s Summary) float64 { return float64(s.N) })
	row("errors", "", func(s Summary) float64 { return float64(s.Errors) })
	row(metric+" mean", unit, func(s Summary) float64 { return s.Mean })
	row(metric+" p50", unit, func(s Summary) float64 { return s.P50 })
	row(metric+" p90", unit, func(s Summary) float64 { return s.P90 })
	row(metric+" p99", unit, func(s Summary) float64 { return s.P99 })
	row(metric+" max", unit, func(s Summary) float64 { return s.Max })
	return t
}
