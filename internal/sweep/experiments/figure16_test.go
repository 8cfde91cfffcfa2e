package experiments

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

	"github.com/coordkit/coordkit/internal/sweep"
)

func figure16Config() Figure16Config {
	return Figure16Config{Timeouts: []string{"12ms", "25ms"}, Trials: 20, PreVote: []string{"off", "on"}, Delay: 7500 * time.Microsecond}
}

// What Figure16 refuses before anything runs, and the specs it makes.
func TestFigure16Specs(t *testing.T) {
	specs, err := figure16Config().Specs()
	require.NoError(t, err)
	require.Len(t, specs, 2)
	require.Equal(t, map[string]string{"nodes": "5", "delay": "7.5ms", "lagging": "2", "timeout": "12ms"}, specs[0].Fixed)
	require.Equal(t, []sweep.Param{{Name: "prevote", Values: []string{"off", "on"}}}, specs[0].Params)
	require.Len(t, specs[0].Seeds, 20)

	cfg := figure16Config()
	cfg.TrialsAt = map[string]int{"12ms": 3}
	specs, err = cfg.Specs()
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3}, specs[0].Seeds, "TrialsAt overrides the range's trials")
	require.Len(t, specs[1].Seeds, 20)

	for name, edit := range map[string]func(*Figure16Config){
		"no trials":           func(c *Figure16Config) { c.Trials = 0 },
		"too many trials":     func(c *Figure16Config) { c.Trials = MaxFigure16Trials + 1 },
		"prevote maybe":       func(c *Figure16Config) { c.PreVote = []string{"maybe"} },
		"timeout below floor": func(c *Figure16Config) { c.Timeouts = []string{"4ms"} },
		"timeout not a time":  func(c *Figure16Config) { c.Timeouts = []string{"xx"} },
		"negative delay":      func(c *Figure16Config) { c.Delay = -time.Millisecond },
	} {
		t.Run(name, func(t *testing.T) {
			c := figure16Config()
			edit(&c)
			require.Error(t, c.Validate())
		})
	}
	c := figure16Config()
	c.PreVote = []string{"on", "maybe"}
	var ve *ValueError
	require.ErrorAs(t, c.Validate(), &ve)
	require.Equal(t, ValueError{Field: "prevote", Value: "maybe", Err: ve.Err}, *ve)
	c = figure16Config()
	c.Timeouts = []string{"12ms", "xx"}
	require.ErrorAs(t, c.Validate(), &ve)
	require.Equal(t, "timeouts", ve.Field)
}

// The tables and points from a results file with known downtimes: the
// paper's row beside ours, nothing measured as null.
func TestFigure16ReportOnly(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, "f.jsonl")
	var lines []string
	for i, v := range []float64{10, 20, 60} {
		p := sweep.Point{"nodes": "5", "delay": "7.5ms", "lagging": "2", "timeout": "12ms", "prevote": "off"}
		b, err := json.Marshal(sweep.Result{Experiment: "election", Point: p, Seed: int64(i + 1),
			Metrics: map[string]float64{"downtime_ms": v, "elections": 1, "churn": 1, "broadcast_ms": 15, "winner_up_to_date": 1}})
		require.NoError(t, err)
		lines = append(lines, string(b))
	}
	require.NoError(t, os.WriteFile(results, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	cfg := figure16Config()
	cfg.Trials, cfg.Results, cfg.ReportOnly = 3, results, true
	cfg.CSV, cfg.SVG = filepath.Join(dir, "f.csv"), filepath.Join(dir, "f.svg")
	cfg.LoadAverage = func() string { return "1.00 2.00 3.00" }
	rep, err := Figure16(context.Background(), cfg)
	require.NoError(t, err)
	require.Zero(t, rep.Ran)
	require.Equal(t, 3, rep.Skipped)
	require.Len(t, rep.Points, 4, "two pre-vote settings × two ranges")
	off12 := rep.Points[0]
	require.Equal(t, "off", off12.PreVote)
	require.Equal(t, "12-24ms", off12.Range)
	require.Equal(t, 3, off12.Trials)
	require.InDelta(t, 30, *off12.Mean, 1e-9)
	require.InDelta(t, 60, *off12.Max, 1e-9)
	require.Nil(t, rep.Points[1].Mean, "25ms: nothing measured")
	require.Len(t, rep.Tables, 3, "a table per pre-vote setting and the paper's")
	require.Equal(t, []string{"12-24ms", "25-50ms"}, rep.Tables[0].Columns)

	b, err := json.Marshal(rep)
	require.NoError(t, err)
	var js map[string]any
	require.NoError(t, json.Unmarshal(b, &js))
	for _, k := range []string{"experiment", "delay", "load_start", "load_end", "elapsed", "ran", "skipped", "points", "paper"} {
		require.Contains(t, js, k)
	}
	require.Equal(t, "figure16", js["experiment"])
	require.Equal(t, map[string]any{"mean_ms_12_24": 35.0, "max_ms_12_24": 152.0}, js["paper"])
	require.Equal(t, "1.00 2.00 3.00", js["load_start"])

	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	require.Contains(t, text.String(), "Figure 16, pre-vote off: downtime after the leader's crash (5 nodes, broadcast time about 15ms)")
	require.Contains(t, text.String(), "The paper's stated numbers beside ours")
	require.Contains(t, text.String(), "0 trials run now, 3 from the results file")
	svg, err := os.ReadFile(cfg.SVG)
	require.NoError(t, err)
	require.Equal(t, 3, strings.Count(string(svg), "<svg"), "one CDF per pre-vote setting, in one image")
	csv, err := os.ReadFile(cfg.CSV)
	require.NoError(t, err)
	require.Len(t, strings.Split(strings.TrimSpace(string(csv)), "\n"), 4)
}

// Figure 16 end to end on one small range: the structure of its output and
// the SVG, never the timings. (Was internal/cli's TestLabFigure16Small.)
func TestFigure16Small(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := Figure16Config{Timeouts: []string{"40ms"}, Trials: 2, PreVote: []string{"on"}, Delay: 7500 * time.Microsecond, SVG: filepath.Join(dir, "f.svg")}
	rep, err := Figure16(ctx, cfg)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Ran)
	require.Len(t, rep.Points, 1)
	require.Equal(t, "40-80ms", rep.Points[0].Range)
	require.Equal(t, 2, rep.Points[0].Trials+rep.Points[0].Errors)
	svg, err := os.ReadFile(cfg.SVG)
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(svg), "<svg"), "one chart")
}

func TestRangeLabel(t *testing.T) {
	require.Equal(t, "12-24ms", RangeLabel("12ms"))
	require.Equal(t, "150-300ms", RangeLabel("150ms"))
	require.Equal(t, "xx", RangeLabel("xx"))
}

// --trials-at's pairs: T=N for a T among the timeouts, else a *ValueError
// naming the pair; ReportOnly needs a results file.
func TestParseTrialsAtAndReportOnly(t *testing.T) {
	got, err := ParseTrialsAt([]string{"12ms=200", "25ms=3"}, []string{"12ms", "25ms"})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"12ms": 200, "25ms": 3}, got)
	for _, pair := range []string{"12ms", "12ms=x", "13ms=5"} {
		_, err := ParseTrialsAt([]string{pair}, []string{"12ms", "25ms"})
		var ve *ValueError
		require.ErrorAs(t, err, &ve, pair)
		require.Equal(t, "trials-at", ve.Field)
		require.Equal(t, pair, ve.Value)
	}
	_, err = ParseTrialsAt([]string{"13ms=5"}, []string{"12ms", "25ms"})
	require.ErrorContains(t, err, "13ms is not one of --timeouts 12ms,25ms")

	c := figure16Config()
	c.ReportOnly, c.Results = true, ""
	require.ErrorIs(t, c.Validate(), ErrNoResults)
	c.Results = "r.jsonl"
	require.NoError(t, c.Validate())
}
