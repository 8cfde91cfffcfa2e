package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLabSweepResume runs a small election sweep end to end, then again on
// the same results file: the rerun measures nothing new. Structure and
// counts only, never timings.
func TestLabSweepResume(t *testing.T) {
	dir := t.TempDir()
	results, csvPath, svg := filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "r.csv"), filepath.Join(dir, "r.svg")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"lab", "sweep", "--experiment", "election", "--param", "timeout=25ms,40ms", "--set", "prevote=on",
		"--seeds", "1..2", "--results", results, "--csv", csvPath, "--svg", svg, "-w", "json"}
	r := runInProcess(ctx, nil, args...)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var out struct {
		Ran, Skipped int
		Points       []struct {
			Label  string
			Trials int
			Errors int
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	if out.Ran != 4 || out.Skipped != 0 || len(out.Points) != 2 || out.Points[0].Label != "timeout=25ms" || out.Points[0].Trials+out.Points[0].Errors != 2 {
		t.Errorf("first run: %+v", out)
	}
	b, _ := os.ReadFile(results)
	if n := strings.Count(string(b), "\n"); n != 4 {
		t.Errorf("results file has %d lines, want 4", n)
	}
	c, _ := os.ReadFile(csvPath)
	if lines := strings.Split(strings.TrimSpace(string(c)), "\n"); len(lines) != 5 || !strings.Contains(lines[0], "downtime_ms") {
		t.Errorf("csv: %q", c)
	}
	if s, _ := os.ReadFile(svg); !strings.HasPrefix(string(s), "<svg") {
		t.Errorf("svg: %.60q", s)
	}
	if !strings.Contains(r.Stderr, "4/4") {
		t.Errorf("no progress on stderr: %q", r.Stderr)
	}

	// Rerun: every measured trial is skipped (an errored one would run again).
	errored := out.Points[0].Errors + out.Points[1].Errors
	r = runInProcess(ctx, nil, args...)
	if r.Code != 0 {
		t.Fatalf("rerun exit %d: %s", r.Code, r.Stderr)
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Ran != errored || out.Skipped != 4-errored {
		t.Errorf("rerun ran %d, skipped %d; want %d and %d", out.Ran, out.Skipped, errored, 4-errored)
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
	} {
		if r := runInProcess(ctx, nil, args...); r.Code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, r.Code, exitUsage, r.Stderr)
		}
	}
}

// lab figure16 end to end on one small range: the structure of its JSON
// and the SVG, never the timings.
func TestLabFigure16Small(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "f.svg")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := runInProcess(ctx, nil, "lab", "figure16", "--trials", "2", "--timeouts", "40ms", "--prevote", "on", "--svg", svg, "-w", "json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var out struct {
		Points []struct {
			PreVote, Range string
			Trials, Errors int
		}
		Paper map[string]float64
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	if len(out.Points) != 1 || out.Points[0].Range != "40-80ms" || out.Points[0].Trials+out.Points[0].Errors != 2 || out.Paper["mean_ms_12_24"] != 35 {
		t.Errorf("output %+v", out)
	}
	if s, _ := os.ReadFile(svg); strings.Count(string(s), "<svg") != 2 {
		t.Errorf("svg: want one chart: %.80q", s)
	}
}
