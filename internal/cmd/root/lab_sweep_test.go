package root

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// The flags reach the sweep: a --report-only summary of a results file
// (nothing runs), printed as JSON with its keys, --csv and --svg written,
// --metric chosen. The sweep itself is tested in internal/sweep/experiments
// (TestSweepResume, TestSweepReportOnly).
func TestLabSweepFlagsReachTheSweep(t *testing.T) {
	dir := t.TempDir()
	results, csvPath, svg := filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "r.csv"), filepath.Join(dir, "r.svg")
	line := `{"experiment":"election","point":{"timeout":"25ms"},"seed":1,"metrics":{"downtime_ms":10,"elections":2}}` + "\n"
	if err := os.WriteFile(results, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runInProcess(context.Background(), nil, "lab", "sweep", "--experiment", "election", "--param", "timeout=25ms,40ms", "--seeds", "1..2",
		"--results", results, "--report-only", "--csv", csvPath, "--svg", svg, "--curve", "timeout", "--metric", "elections", "-w", "json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	if out["experiment"] != "election" || out["metric"] != "elections" || out["seeds"] != 2.0 || out["ran"] != 0.0 || out["skipped"] != 1.0 {
		t.Errorf("output %v", out)
	}
	pts, _ := out["points"].([]any)
	if len(pts) != 2 || pts[0].(map[string]any)["mean"] != 2.0 || pts[1].(map[string]any)["mean"] != nil {
		t.Errorf("points %v", pts)
	}
	if c, _ := os.ReadFile(csvPath); !strings.Contains(string(c), "elections") {
		t.Errorf("csv: %q", c)
	}
	if s, _ := os.ReadFile(svg); !strings.Contains(string(s), "elections against timeout") {
		t.Errorf("svg: %.200q", s)
	}
	r = runInProcess(context.Background(), nil, "lab", "sweep", "--experiment", "election", "--param", "timeout=25ms", "--seeds", "1", "--results", results, "--report-only")
	if r.Code != 0 || !strings.Contains(r.Stdout, "sweep election: 1 points x 1 seeds (0 run now, 1 from "+results+")") {
		t.Errorf("simple: exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
	}
}

func TestLabSweepUsage(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{
		{"lab", "sweep"},
		{"lab", "sweep", "--experiment", "nope"},
		{"lab", "sweep", "--experiment", "election", "--param", "colour=red"},
		{"lab", "sweep", "--experiment", "election", "--param", "timeout"},
		{"lab", "sweep", "--experiment", "election", "--seeds", "3..1"},
		{"lab", "sweep", "--experiment", "election", "--parallel", "0"},
		{"lab", "sweep", "--experiment", "election", "--param", "prevote=on,off", "--curve", "prevote"},
		{"lab", "sweep", "--experiment", "election", "--spec", "x.spec"},
		{"lab", "sweep", "--experiment", "election", "--param", "timeout=1ms"},
		{"lab", "sweep", "--experiment", "election", "--param", "prevote=maybe"},
		{"lab", "sweep", "--experiment", "lock-safety", "--param", "clients=1"},
		{"lab", "figure16", "--trials", "0"},
		{"lab", "figure16", "--prevote", "maybe"},
		{"lab", "figure16", "--trials-at", "13ms=5"},
		{"lab", "figure16", "--timeouts", "4ms"},
		{"lab", "figure16", "--delay", "-1ms"},
		{"lab", "figure16", "--report-only"},
		{"lab", "figure16", "--trials-at", "12ms"},
		{"lab", "sweep", "--experiment", "election", "--report-only"},
		{"lab", "sweep", "--experiment", "election", "--param", "timeout=25ms", "--curve", "timeout"},
	} {
		if r := runInProcess(ctx, nil, args...); r.Code != cmdutil.ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, r.Code, cmdutil.ExitUsage, r.Stderr)
		}
	}
}

// The flags reach Figure 16: --report-only over a results file prints the
// JSON object with the paper's numbers; the figure itself is tested in
// internal/sweep/experiments (TestFigure16Small, TestFigure16ReportOnly).
func TestLabFigure16FlagsReachTheFigure(t *testing.T) {
	results := filepath.Join(t.TempDir(), "f.jsonl")
	line := `{"experiment":"election","point":{"delay":"7.5ms","lagging":"2","nodes":"5","prevote":"on","timeout":"40ms"},"seed":1,"metrics":{"downtime_ms":50}}` + "\n"
	if err := os.WriteFile(results, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runInProcess(context.Background(), nil, "lab", "figure16", "--trials", "2", "--trials-at", "40ms=1", "--timeouts", "40ms", "--prevote", "on",
		"--results", results, "--report-only", "-w", "json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var out struct {
		Ran, Skipped int
		Points       []struct {
			PreVote, Range string
			Trials, Errors int
			Mean           *float64 `json:"mean_ms"`
		}
		Paper map[string]float64
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	if out.Ran != 0 || out.Skipped != 1 || len(out.Points) != 1 || out.Points[0].Range != "40-80ms" || out.Points[0].Trials != 1 ||
		out.Points[0].Mean == nil || *out.Points[0].Mean != 50 || out.Paper["mean_ms_12_24"] != 35 {
		t.Errorf("output %+v", out)
	}
}
