package scalebench_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/chart"
	"github.com/coordkit/coordkit/internal/bench/scalebench"
)

var nan = scalebench.Value(math.NaN())

func TestShapeStrings(t *testing.T) {
	ss := []scalebench.Shape{{Elections: 1, Candidates: 500}, {Elections: 100, Candidates: 5}}
	got := scalebench.ShapeStrings(ss)
	require.Equal(t, []string{"1x500", "100x5"}, got)
	for i, s := range got {
		back, err := scalebench.ParseShape(s)
		require.NoError(t, err)
		require.Equal(t, ss[i], back)
	}
}

func TestMerge(t *testing.T) {
	row := func(point string) scalebench.Row {
		return scalebench.Row{Curve: scalebench.CurveQueue, Members: 1, Point: point, Metric: "handoff_p50_ms", Coordkit: 1, EtcdConcurrency: nan}
	}
	target := func(name string, measured scalebench.Value) scalebench.Target {
		return scalebench.Target{Name: name, Measured: measured, Target: 100, Unit: "ms", AtMost: true}
	}
	a := scalebench.Result{Benchmark: "scale", Fsync: true, Rows: []scalebench.Row{row("W=1")},
		Targets: []scalebench.Target{target("handoff", 5), target("failover", nan), target("herd", 0)},
		Notes:   []string{"one", "two"}}
	b := scalebench.Result{Benchmark: "scale", Fsync: false, Rows: []scalebench.Row{row("W=10")},
		Targets: []scalebench.Target{target("handoff", nan), target("failover", 2500), target("rss", 7)},
		Notes:   []string{"two", "three"}}

	for _, tc := range []struct {
		name string
		a, b scalebench.Result
		want scalebench.Result
	}{
		{"zero and b is b", scalebench.Result{}, b, b},
		{"a and b", a, b, scalebench.Result{Benchmark: "scale", Fsync: false,
			Rows: []scalebench.Row{row("W=1"), row("W=10")},
			// handoff: b did not measure it, a's stays; failover: b's
			// replaces a's unmeasured one; rss: new.
			Targets: []scalebench.Target{target("handoff", 5), target("failover", 2500), target("herd", 0), target("rss", 7)},
			Notes:   []string{"one", "two", "three"}}},
		{"fsync kept when both had it", a, scalebench.Result{Benchmark: "scale", Fsync: true}, a},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aJSON, err := json.Marshal(tc.a)
			require.NoError(t, err)
			got := tc.a.Merge(tc.b)
			assertResultEqual(t, tc.want, got)
			after, err := json.Marshal(tc.a)
			require.NoError(t, err)
			require.JSONEq(t, string(aJSON), string(after), "Merge left its receiver alone")
		})
	}
}

// assertResultEqual compares through JSON, where NaN is null.
func assertResultEqual(t *testing.T, want, got scalebench.Result) {
	t.Helper()
	w, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(w), string(g))
}

func TestCharts(t *testing.T) {
	res := scalebench.Result{Benchmark: "scale", Rows: []scalebench.Row{
		{Curve: scalebench.CurveQueue, Members: 1, Point: "W=1", Metric: "handoff_p50_ms", Coordkit: 2, EtcdConcurrency: 3},
		{Curve: scalebench.CurveQueue, Members: 1, Point: "W=10", Metric: "handoff_p50_ms", Coordkit: 4, EtcdConcurrency: nan},
		{Curve: scalebench.CurveQueue, Members: 3, Point: "W=10", Metric: "handoff_p50_ms", Coordkit: 5, EtcdConcurrency: nan},
		{Curve: scalebench.CurveQueue, Members: 1, Point: "W=1", Metric: "herd_releases", Coordkit: 0, EtcdConcurrency: nan},
		{Curve: scalebench.CurveCandidates, Members: 1, Point: "1x50", Metric: "failover_max_ms", Coordkit: 2100, EtcdConcurrency: nan},
		{Curve: scalebench.CurveCosts, Members: 1, Metric: "commit_ms", Coordkit: 1, EtcdConcurrency: nan},
	}, Targets: []scalebench.Target{{Name: "failover", Target: 6000, Unit: "ms", AtMost: true}}}

	want := []chart.Chart{
		{Title: "Queue depth: handoff p50 by waiters W", YLabel: "ms", Categories: []string{"W=1", "W=10"}, Series: []chart.Series{
			{Name: "coordkit, 1 member", Points: []chart.Point{{X: 0, Y: 2}, {X: 1, Y: 4}}},
			{Name: "etcd concurrency, 1 member", Points: []chart.Point{{X: 0, Y: 3}}},
			{Name: "coordkit, 3 members", Points: []chart.Point{{X: 1, Y: 5}}},
		}},
		// The TTL is read back from the failover target (TTL + 1s).
		{Title: "Many candidates: failover after the leader's crash, max (TTL 5s)", YLabel: "ms", Categories: []string{"1x50"}, Series: []chart.Series{
			{Name: "coordkit, 1 member", Points: []chart.Point{{X: 0, Y: 2100}}},
		}},
	}
	assert.Equal(t, want, res.Charts())

	res.Targets = nil
	assert.Contains(t, res.Charts()[1].Title, "(TTL 2s)", "2s without a failover target")
}

func TestWriteSVGNoCurve(t *testing.T) {
	var b bytes.Buffer
	err := scalebench.WriteSVG(&b, scalebench.Result{Benchmark: "scale", Rows: []scalebench.Row{
		{Curve: scalebench.CurveCosts, Members: 1, Metric: "commit_ms", Coordkit: 1, EtcdConcurrency: nan},
	}})
	require.ErrorIs(t, err, scalebench.ErrNoCurve)
}

// docs/scale.svg is drawn from docs/scale-data by 'coordctl bench scale
// --from ... --svg': the saved results, merged in order, draw it again byte
// for byte.
func TestWriteSVGDrawsDocsScaleSVG(t *testing.T) {
	docs := filepath.Join("..", "..", "..", "docs")
	var res scalebench.Result
	for _, name := range []string{"full.json", "candidates-1x500.json", "candidates-100x5.json"} {
		b, err := os.ReadFile(filepath.Join(docs, "scale-data", name))
		require.NoError(t, err)
		var one scalebench.Result
		require.NoError(t, json.Unmarshal(b, &one), name)
		res = res.Merge(one)
	}
	var got bytes.Buffer
	require.NoError(t, scalebench.WriteSVG(&got, res))
	want, err := os.ReadFile(filepath.Join(docs, "scale.svg"))
	require.NoError(t, err)
	require.Equal(t, string(want), got.String())
	require.Equal(t, 3, strings.Count(got.String(), "<g transform="), "three charts")
}
