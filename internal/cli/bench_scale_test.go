package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBenchScaleBadFlags(t *testing.T) {
	t.Parallel()
	cases := [][]string{
		{"bench", "scale", "--waiters", "0"},
		{"bench", "scale", "--members", "2"},
		{"bench", "scale", "--shapes", "1by5"},
		{"bench", "scale", "--curves", "queue,nope"},
		{"bench", "scale", "--sessions", "65"},
	}
	for _, args := range cases {
		res := runInProcess(context.Background(), nil, args...)
		require.Equal(t, exitUsage, res.Code, "%v: %s", args, res.Stderr)
		require.Contains(t, res.Stderr, "Usage:")
	}
}

// A tiny run: the JSON contract, then the same result drawn from the file
// with --from and --svg, and printed as tables.
func TestBenchScaleJSONAndSVG(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res := runInProcess(ctx, nil, "-w", "json", "bench", "scale", "--unsafe-no-fsync", "--members", "1",
		"--curves", "queue,locks", "--waiters", "1,3", "--locks", "4", "--handoffs", "3",
		"--duration", "300ms", "--workers", "4", "--sessions", "2")
	require.Equal(t, exitOK, res.Code, res.Stderr)
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
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &out), res.Stdout)
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
	require.Contains(t, res.Stderr, "bench scale: starting a 1-member embedded etcd")

	dir := t.TempDir()
	js, svg := filepath.Join(dir, "scale.json"), filepath.Join(dir, "scale.svg")
	require.NoError(t, os.WriteFile(js, []byte(res.Stdout), 0o644))
	drawn := runInProcess(ctx, nil, "bench", "scale", "--from", js, "--svg", svg)
	require.Equal(t, exitOK, drawn.Code, drawn.Stderr)
	require.Contains(t, drawn.Stdout, "queue depth: one lock")
	require.Contains(t, drawn.Stdout, "W=3 herd_releases")
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(b), "<svg"), string(b[:min(len(b), 80)]))
	require.Contains(t, string(b), "Queue depth: handoff p50")
}
