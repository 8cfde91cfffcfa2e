package scalebench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A tiny run through Run: the -w json contract, then the same result read
// back from its file (ReadResults), drawn (WriteSVGFile) and printed as
// tables (Printed). Moved from internal/cli's TestBenchScaleJSONAndSVG,
// which ran it through the command.
func TestRunJSONReadBackAndSVG(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o, err := Selection{Curves: []string{CurveQueue, CurveLocks}}.Apply(DefaultOptions())
	require.NoError(t, err)
	o.NoFsync, o.Members, o.Waiters, o.Locks, o.Handoffs, o.Duration, o.Workers, o.Sessions = true, []int{1}, []int{1, 3}, []int{4}, 3, 300*time.Millisecond, 4, 2
	var progress bytes.Buffer
	o.Progress = &progress
	res, err := Run(ctx, o)
	require.NoError(t, err)
	js, err := json.Marshal(res)
	require.NoError(t, err)
	var out struct {
		Benchmark string
		Rows      []struct {
			Curve, Point, Metric, Unit string
			Members                    int
			Coordkit                   *float64
			EtcdConcurrency            *float64 `json:"etcd_concurrency"`
		}
		Targets []struct{ Name string }
	}
	require.NoError(t, json.Unmarshal(js, &out), string(js))
	require.Equal(t, "scale", out.Benchmark)
	seen := map[string]bool{}
	for _, r := range out.Rows {
		seen[r.Curve+" "+r.Point+" "+r.Metric] = true
		require.NotNil(t, r.Coordkit, r.Metric)
		if r.Metric == "herd_releases" {
			require.Zero(t, *r.Coordkit)
			require.Nil(t, r.EtcdConcurrency, "herds are counted for coordkit only")
		}
	}
	for _, k := range []string{"queue W=1 handoff_p50_ms", "queue W=3 herd_releases", "locks L=4 acquisitions_per_s", "locks L=4 goroutines_per_held_lock"} {
		require.True(t, seen[k], k)
	}
	require.NotEmpty(t, out.Targets)
	require.Contains(t, progress.String(), "bench scale: starting a 1-member embedded etcd")

	dir := t.TempDir()
	file, svg := filepath.Join(dir, "scale.json"), filepath.Join(dir, "scale.svg")
	require.NoError(t, os.WriteFile(file, js, 0o644))
	back, err := ReadResults([]string{file})
	require.NoError(t, err)
	var text bytes.Buffer
	require.NoError(t, back.Printed().WriteSimple(&text))
	require.Contains(t, text.String(), "queue depth: one lock")
	require.Contains(t, text.String(), "W=3 herd_releases")
	require.NoError(t, WriteSVGFile(svg, back))
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(b), "<svg"), string(b[:min(len(b), 80)]))
	require.Contains(t, string(b), "Queue depth: handoff p50")
}

func TestSelectionApply(t *testing.T) {
	t.Parallel()
	def := DefaultOptions()
	all := Curves()
	for _, tc := range []struct {
		name string
		sel  Selection
		want func(o Options) Options
		err  string
	}{
		{"everything", Selection{Curves: all, Shapes: ShapeStrings(def.Shapes)}, func(o Options) Options { return o }, ""},
		{"quick", Selection{Quick: true, Curves: all}, func(Options) Options { return QuickOptions() }, ""},
		{"quick, explicit locks and shapes win", Selection{Quick: true, Curves: all, Shapes: []string{"2x3"},
			Given: func(f string) bool { return f == "locks" || f == "shapes" }}, func(Options) Options {
			o := QuickOptions()
			o.Locks, o.Shapes = def.Locks, []Shape{{2, 3}}
			return o
		}, ""},
		{"curves left out get no points", Selection{Curves: []string{CurveLocks}, Shapes: []string{"1x5"}}, func(o Options) Options {
			o.Waiters, o.Shapes, o.IdleSessions, o.NoCosts = nil, nil, nil, true
			return o
		}, ""},
		{"unknown curve", Selection{Curves: []string{"queue", "nope"}}, nil, `--curves: unknown curve "nope": want some of [costs queue locks candidates sessions]`},
		{"bad shape", Selection{Curves: all, Shapes: []string{"1by5"}}, nil, `scalebench: invalid options: shape "1by5"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.sel.Apply(def)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrOptions)
				require.ErrorContains(t, err, tc.err)
				require.True(t, strings.HasPrefix(err.Error(), tc.err), err.Error())
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want(def), got)
		})
	}
}

func TestReadResultsRefusesOtherJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	other := filepath.Join(dir, "lock.json")
	require.NoError(t, os.WriteFile(other, []byte(`{"benchmark":"lock","rows":[]}`), 0o644))
	_, err := ReadResults([]string{other})
	require.ErrorContains(t, err, other+" is not the -w json output of coordctl bench scale")
	_, err = ReadResults([]string{filepath.Join(dir, "missing.json")})
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorIs(t, WriteSVGFile(filepath.Join(dir, "x.svg"), Result{Benchmark: "scale"}), ErrNoCurve)
	_, err = os.Stat(filepath.Join(dir, "x.svg"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing to draw: no file")
}
