package experiments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/sweep"
	"github.com/coordkit/coordkit/scenarios/report"
)

func mustLookup(t *testing.T, name string) Experiment {
	t.Helper()
	e, err := Lookup(name)
	require.NoError(t, err)
	return e
}

// A small election sweep end to end, then again on the same results file:
// the rerun measures nothing new. Structure and counts only, never timings.
// (Was internal/cli's TestLabSweepResume.)
func TestSweepResume(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	cfg := SweepConfig{
		Spec: sweep.Spec{Experiment: "election", Params: []sweep.Param{{Name: "timeout", Values: []string{"25ms", "40ms"}}},
			Fixed: map[string]string{"prevote": "on"}, Seeds: []int64{1, 2}},
		Experiment: mustLookup(t, "election"), Parallel: 1,
		Results: filepath.Join(dir, "r.jsonl"), CSV: filepath.Join(dir, "r.csv"), SVG: filepath.Join(dir, "r.svg"),
		Progress: &progress,
	}
	require.NoError(t, cfg.Validate())
	rep, err := Sweep(ctx, cfg)
	require.NoError(t, err)
	var out struct {
		Experiment, Metric string
		Seeds              int
		Ran, Skipped       int
		Points             []struct {
			Label  string
			Trials int
			Errors int
		}
	}
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &out))
	require.Equal(t, "election", out.Experiment)
	require.Equal(t, "downtime_ms", out.Metric, "the experiment's default metric")
	require.Equal(t, 2, out.Seeds)
	require.Equal(t, 4, out.Ran)
	require.Zero(t, out.Skipped)
	require.Len(t, out.Points, 2)
	require.Equal(t, "timeout=25ms", out.Points[0].Label)
	require.Equal(t, 2, out.Points[0].Trials+out.Points[0].Errors)
	lines, err := os.ReadFile(cfg.Results)
	require.NoError(t, err)
	require.Equal(t, 4, strings.Count(string(lines), "\n"), "one result line per trial")
	c, err := os.ReadFile(cfg.CSV)
	require.NoError(t, err)
	csvLines := strings.Split(strings.TrimSpace(string(c)), "\n")
	require.Len(t, csvLines, 5)
	require.Contains(t, csvLines[0], "downtime_ms")
	s, err := os.ReadFile(cfg.SVG)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(s), "<svg"), "%.60q", s)
	require.Contains(t, progress.String(), "4/4")
	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	require.Contains(t, text.String(), "sweep election: 2 points x 2 seeds (4 run now, 0 from "+cfg.Results+")")

	// Rerun: every measured trial is skipped (an errored one would run again).
	errored := out.Points[0].Errors + out.Points[1].Errors
	rep, err = Sweep(ctx, cfg)
	require.NoError(t, err)
	require.Equal(t, errored, rep.Ran)
	require.Equal(t, 4-errored, rep.Skipped)
}

// ReportOnly runs nothing and summarises the results file; --curve on a
// non-numeric parameter is sweep.ErrNotNumeric, after the summary is known.
func TestSweepReportOnly(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, "r.jsonl")
	var lines []string
	for i, v := range []float64{10, 20, 30} {
		b, err := json.Marshal(sweep.Result{Experiment: "election", Point: sweep.Point{"timeout": "25ms"}, Seed: int64(i + 1), Metrics: map[string]float64{"downtime_ms": v}})
		require.NoError(t, err)
		lines = append(lines, string(b))
	}
	require.NoError(t, os.WriteFile(results, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	cfg := SweepConfig{
		Spec:       sweep.Spec{Experiment: "election", Params: []sweep.Param{{Name: "timeout", Values: []string{"25ms"}}}, Seeds: []int64{1, 2, 3, 4}},
		Experiment: mustLookup(t, "election"), Parallel: 1, Results: results, ReportOnly: true,
	}
	rep, err := Sweep(context.Background(), cfg)
	require.NoError(t, err)
	require.Zero(t, rep.Ran)
	require.Equal(t, 3, rep.Skipped)
	require.Len(t, rep.Summaries, 1)
	require.Equal(t, 3, rep.Summaries[0].N)
	require.InDelta(t, 20, rep.Summaries[0].Mean, 1e-9)
	require.InDelta(t, 30, rep.Summaries[0].Max, 1e-9)
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	require.Contains(t, string(b), `"mean":20`)

	cfg.Spec.Params = []sweep.Param{{Name: "prevote", Values: []string{"on"}}}
	cfg.Curve, cfg.SVG = "prevote", filepath.Join(dir, "c.svg")
	_, err = Sweep(context.Background(), cfg)
	require.ErrorIs(t, err, sweep.ErrNotNumeric)
}

// A scenario per seed: its report's metrics plus claims_failed.
func TestSweepScenario(t *testing.T) {
	cfg := SweepConfig{
		Spec:       sweep.Spec{Experiment: "scenario", Fixed: map[string]string{"name": "lamport-clocks"}, Seeds: []int64{1}},
		Experiment: mustLookup(t, "scenario"), Parallel: 1,
	}
	require.NoError(t, cfg.Validate())
	rep, err := Sweep(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, rep.Results, 1)
	require.Empty(t, rep.Results[0].Error)
	require.Contains(t, rep.Results[0].Metrics, "order_violations")
	require.Equal(t, 0.0, rep.Results[0].Metrics["claims_failed"])

	cfg.Spec.Fixed["name"] = "no-such"
	rep, err = Sweep(context.Background(), cfg)
	require.NoError(t, err)
	require.Contains(t, rep.Results[0].Error, `unknown scenario "no-such"`)
}

func TestScenarioMetrics(t *testing.T) {
	rep := report.New("x", "")
	rep.Metric("m", 7, "")
	rep.Check("a", "1", "1", true)
	rep.Check("b", "1", "2", false)
	rep.Check("c", "1", "3", false)
	require.Equal(t, map[string]float64{"m": 7, "claims_failed": 2}, ScenarioMetrics(rep))
}

// The table, and what is refused before anything runs.
func TestExperimentChecks(t *testing.T) {
	require.Equal(t, []string{"election", "election-safety", "lock-safety", "scenario"}, Names())
	_, err := Lookup("nope")
	require.ErrorIs(t, err, sweep.ErrUnknownExperiment)
	require.EqualError(t, err, `unknown experiment "nope": want election or election-safety or lock-safety or scenario`)

	election := mustLookup(t, "election")
	spec := func(param, values string) sweep.Spec {
		return sweep.Spec{Experiment: "election", Params: []sweep.Param{{Name: param, Values: strings.Split(values, ",")}}, Seeds: []int64{1}}
	}
	err = election.CheckParams(spec("colour", "red"))
	require.ErrorIs(t, err, ErrUnknownParam)
	require.EqualError(t, err, `experiment election has no parameter "colour" (it has nodes, timeout, delay, prevote, lagging, settle)`)
	fixed := sweep.Spec{Experiment: "election", Fixed: map[string]string{"x": "1"}, Seeds: []int64{1}}
	require.ErrorIs(t, election.CheckParams(fixed), ErrUnknownParam)
	require.NoError(t, election.CheckParams(spec("timeout", "25ms")))

	for name, tc := range map[string]struct {
		exp  string
		spec sweep.Spec
		want error
	}{
		"timeout below raft's floor": {"election", spec("timeout", "50ms,1ms"), nil},
		"prevote maybe":              {"election", spec("prevote", "on,maybe"), sweep.ErrSpec},
		"nodes not a number":         {"election", spec("nodes", "five"), sweep.ErrSpec},
		"one check client":           {"lock-safety", sweep.Spec{Experiment: "lock-safety", Params: []sweep.Param{{Name: "clients", Values: []string{"1"}}}, Seeds: []int64{1}}, nil},
		"check fencing maybe":        {"election-safety", sweep.Spec{Experiment: "election-safety", Params: []sweep.Param{{Name: "fencing", Values: []string{"maybe"}}}, Seeds: []int64{1}}, sweep.ErrSpec},
	} {
		t.Run(name, func(t *testing.T) {
			err := mustLookup(t, tc.exp).CheckPoints(tc.spec)
			require.Error(t, err)
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
			}
		})
	}
	require.NoError(t, election.CheckPoints(spec("timeout", "25ms,50ms")))
	require.NoError(t, mustLookup(t, "scenario").CheckPoints(sweep.Spec{Experiment: "scenario", Seeds: []int64{1}}), "scenario reads its point only when it opens")

	cfg := SweepConfig{Spec: spec("colour", "red"), Experiment: election, Parallel: 0}
	require.ErrorIs(t, cfg.Validate(), ErrUnknownParam, "the parameters are checked before --parallel")
	cfg.Spec = spec("timeout", "1ms")
	require.ErrorIs(t, cfg.Validate(), ErrParallel, "--parallel before the points")
	cfg.Parallel = 1
	require.Error(t, cfg.Validate())
	require.False(t, errors.Is(cfg.Validate(), ErrParallel))

	// --curve and --report-only are checked first, in that order.
	cfg = SweepConfig{Spec: spec("timeout", "25ms"), Experiment: election, Parallel: 0, Curve: "prevote", ReportOnly: true}
	var ve *ValueError
	require.ErrorAs(t, cfg.Validate(), &ve)
	require.Equal(t, ValueError{Field: "curve", Value: "prevote", Err: ve.Err}, *ve)
	require.EqualError(t, ve.Err, "not a swept parameter")
	cfg.Curve = "timeout"
	require.ErrorIs(t, cfg.Validate(), ErrCurveNeedsSVG)
	cfg.SVG = "c.svg"
	require.ErrorIs(t, cfg.Validate(), ErrNoResults)
	cfg.Results = "r.jsonl"
	require.ErrorIs(t, cfg.Validate(), ErrParallel)
	cfg.Parallel = 1
	require.NoError(t, cfg.Validate())
}

func TestCheckConfig(t *testing.T) {
	cfg, err := CheckConfig("lock", sweep.Point{"fencing": "off", "fence-first": "off", "duration": "3s", "clients": "4", "ttl": "3s", "kind": "semaphore"})
	require.NoError(t, err)
	require.False(t, cfg.Fencing)
	require.True(t, cfg.NoFenceFirst)
	require.Equal(t, 3*time.Second, cfg.Duration)
	require.Equal(t, 4, cfg.Clients)
	require.EqualValues(t, "semaphore", cfg.Kind)
	_, err = CheckConfig("lock", sweep.Point{"duration": "soon"})
	require.ErrorIs(t, err, sweep.ErrSpec)
}
