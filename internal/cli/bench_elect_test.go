package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBenchElectUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "elect", "--rounds", "0"},
		{"bench", "elect", "--crash-rounds", "-1"},
		{"bench", "elect", "extra"},
	} {
		res := runInProcess(context.Background(), nil, args...)
		require.Equal(t, exitUsage, res.Code, "%v: %s", args, res.Stderr)
	}
}

// A short run: both implementations measured, rows in the contract's shape.
func TestBenchElectShortRunJSON(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res := runInProcess(ctx, nil, "-w", "json", "bench", "elect", "--rounds", "3", "--crash-rounds", "1")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "bench elect: etcd_concurrency: 1 crash failovers")
	var report struct {
		Benchmark string `json:"benchmark"`
		Rows      []struct {
			Metric          string   `json:"metric"`
			Coordkit        *float64 `json:"coordkit"`
			EtcdConcurrency *float64 `json:"etcd_concurrency"`
			Unit            string   `json:"unit"`
		} `json:"rows"`
	}
	require.Equal(t, 1, strings.Count(res.Stdout, "\n"), "one JSON line")
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &report))
	require.Equal(t, "elect", report.Benchmark)
	var metrics []string
	for _, r := range report.Rows {
		metrics = append(metrics, r.Metric)
		require.Equal(t, "ms", r.Unit)
		require.NotNil(t, r.Coordkit)
		require.NotNil(t, r.EtcdConcurrency)
		require.Greater(t, *r.Coordkit, 0.0, r.Metric)
		require.Greater(t, *r.EtcdConcurrency, 0.0, r.Metric)
		if r.Metric == "crash_failover_ttl2_ms" {
			// The lease must expire on the server: at least TTL − one keepalive interval.
			require.Greater(t, *r.Coordkit, 1000.0)
			require.Greater(t, *r.EtcdConcurrency, 1000.0)
		}
	}
	require.Equal(t, []string{"handover_p50_ms", "handover_p99_ms", "handover_queued_200ms_p50_ms", "crash_failover_ttl2_ms"}, metrics)
}
