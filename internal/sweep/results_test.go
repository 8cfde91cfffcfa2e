package sweep

import (
	"bytes"
	"encoding/csv"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func spec2() Spec {
	return Spec{Experiment: "e", Params: []Param{{"a", []string{"1", "2"}}}, Seeds: []int64{1, 2, 3}}
}

func TestReadResultsTornLine(t *testing.T) {
	in := `{"experiment":"e","point":{"a":"1"},"seed":1,"metrics":{"m":5}}
{"experiment":"e","point":{"a":"1"},"seed":2,"metrics":{"m":6}}
{"experiment":"e","point":{"a":"1"},"se`
	rs, err := ReadResults(strings.NewReader(in))
	if err != nil || len(rs) != 2 {
		t.Fatalf("ReadResults = %d results, %v; want 2 and the torn line ignored", len(rs), err)
	}
	if _, err := ReadResults(strings.NewReader("{bad}\n{}\n")); !errors.Is(err, ErrSpec) {
		t.Errorf("a bad line that is not the last: %v, want ErrSpec", err)
	}
}

func TestPendingAndLatest(t *testing.T) {
	s := spec2()
	old := []Result{
		{Experiment: "e", Point: Point{"a": "1"}, Seed: 1, Metrics: map[string]float64{"m": 1}},
		{Experiment: "e", Point: Point{"a": "1"}, Seed: 2, Error: "boom"},                           // errored: runs again
		{Experiment: "other", Point: Point{"a": "1"}, Seed: 3, Metrics: map[string]float64{"m": 1}}, // another experiment
		{Experiment: "e", Point: Point{"a": "9"}, Seed: 1, Metrics: map[string]float64{"m": 1}},     // not in the grid
		{Experiment: "e", Point: Point{"a": "2"}, Seed: 3, Metrics: map[string]float64{"m": 7}},
		{Experiment: "e", Point: Point{"a": "2"}, Seed: 3, Error: "later error"}, // does not replace a measurement
	}
	var keys []string
	for _, tr := range Pending(s, old) {
		keys = append(keys, tr.Key())
	}
	want := "a=1 #2,a=1 #3,a=2 #1,a=2 #2"
	if strings.Join(keys, ",") != want {
		t.Errorf("Pending = %v, want %s", keys, want)
	}
	l := Latest(s, old)
	if len(l) != 3 || l[2].Error != "" || l[2].Metrics["m"] != 7 {
		t.Errorf("Latest = %+v", l)
	}
}

func TestSummarize(t *testing.T) {
	s := spec2()
	var rs []Result
	for i, v := range []float64{30, 10, 20} {
		rs = append(rs, Result{Experiment: "e", Point: Point{"a": "1"}, Seed: int64(i + 1), Metrics: map[string]float64{"m": v}})
	}
	rs = append(rs, Result{Experiment: "e", Point: Point{"a": "2"}, Seed: 1, Error: "x"})
	sums := Summarize(s, rs, "m")
	if len(sums) != 2 {
		t.Fatalf("%d summaries", len(sums))
	}
	a := sums[0]
	if a.N != 3 || a.Mean != 20 || a.P50 != 20 || a.Max != 30 || a.Min != 10 || a.P99 != 30 {
		t.Errorf("summary %+v", a)
	}
	b := sums[1]
	if b.N != 0 || b.Errors != 1 || !math.IsNaN(b.P50) {
		t.Errorf("summary of a point without measurements %+v", b)
	}
	var buf bytes.Buffer
	tb := Table("t", "m", "ms", sums)
	if len(tb.Columns) != 2 || tb.Columns[0] != "a=1" || len(tb.Rows) != 7 {
		t.Errorf("table %+v", tb)
	}
	if err := WriteCSV(&buf, rs); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(recs) != 5 || strings.Join(recs[0], ",") != "experiment,a,seed,m,error,elapsed_ms" {
		t.Errorf("csv %v %v", recs, err)
	}
}

func TestQuantileNearestRank(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for p, want := range map[float64]float64{0.5: 5, 0.9: 9, 0.99: 10, 1: 10, 0: 1} {
		if got := Quantile(v, p); got != want {
			t.Errorf("Quantile(%v) = %v, want %v", p, got, want)
		}
	}
}

func TestProgressLine(t *testing.T) {
	got := Line("sweep x", 25, 100, 2, 30*time.Second)
	want := "sweep x [######..................] 25/100 (2 errors), 30s elapsed, about 1m30s left"
	if got != want {
		t.Errorf("Line =\n%q, want\n%q", got, want)
	}
	if got := Line("s", 4, 4, 0, time.Second); strings.Contains(got, "left") {
		t.Errorf("finished line has an estimate: %q", got)
	}
}

func TestNumberAndCharts(t *testing.T) {
	for in, want := range map[string]float64{"7.5ms": 7.5, "2s": 2000, "3": 3} {
		if got, ok := Number(in); !ok || got != want {
			t.Errorf("Number(%q) = %v, %v", in, got, ok)
		}
	}
	if _, ok := Number("on"); ok {
		t.Error("Number(on) is numeric")
	}
	s := Spec{Experiment: "e", Params: []Param{{"t", []string{"10ms", "20ms"}}, {"pv", []string{"on", "off"}}}, Seeds: []int64{1}}
	var rs []Result
	for _, p := range s.Grid() {
		rs = append(rs, Result{Experiment: "e", Point: p, Seed: 1, Metrics: map[string]float64{"m": 1}})
	}
	sums := Summarize(s, rs, "m")
	c := CDFChart("c", "m", sums)
	if len(c.Series) != 4 || len(c.Series[0].Points) != cdfPoints+1 || c.Series[0].Points[cdfPoints].Y != 100 {
		t.Errorf("CDF chart %+v", c)
	}
	pc, err := PercentileChart("p", "m", s, "t", sums)
	if err != nil || len(pc.Series) != 8 || len(pc.Series[0].Points) != 2 || pc.Series[0].Name != "pv=on p50" {
		t.Errorf("percentile chart %+v %v", pc, err)
	}
	if _, err := PercentileChart("p", "m", s, "pv", sums); !errors.Is(err, ErrNotNumeric) {
		t.Errorf("curve against on/off: %v", err)
	}
	var buf bytes.Buffer
	if err := WriteSVG(&buf, c, pc); err != nil || !strings.HasPrefix(buf.String(), "<svg") || strings.Count(buf.String(), "<svg") != 3 {
		t.Errorf("WriteSVG: %v", err)
	}
}
