package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBenchLockBadFlags(t *testing.T) {
	cases := [][]string{
		{"bench", "lock", "--iterations", "0"},
		{"bench", "lock", "--handoffs", "-1"},
		{"bench", "lock", "--duration", "0s"},
		{"bench", "lock", "--workers", "1"},
		{"bench", "lock", "--hold", "-1ms"},
	}
	for _, args := range cases {
		res := runInProcess(context.Background(), nil, args...)
		require.Equal(t, exitUsage, res.Code, "%v: %s", args, res.Stderr)
		require.Contains(t, res.Stderr, "Usage:")
	}
}

// A tiny run: the JSON contract and sane numbers, not performance.
func TestBenchLockJSON(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := runInProcess(ctx, nil, "-w", "json", "bench", "lock", "--unsafe-no-fsync",
		"--iterations", "5", "--handoffs", "3", "--duration", "300ms", "--workers", "2,3")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	var out struct {
		Benchmark string
		Fsync     bool
		Rows      []struct {
			Metric          string
			Coordkit        float64
			EtcdConcurrency float64 `json:"etcd_concurrency"`
			Unit            string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &out), res.Stdout)
	require.Equal(t, "lock", out.Benchmark)
	require.False(t, out.Fsync)
	var metrics []string
	for _, r := range out.Rows {
		metrics = append(metrics, r.Metric)
		require.Positive(t, r.Coordkit, r.Metric)
		require.Positive(t, r.EtcdConcurrency, r.Metric)
	}
	require.Equal(t, []string{"uncontended_p50_ms", "handoff_p50_ms", "handoff_p99_ms", "contended_2_per_s", "contended_3_per_s"}, metrics)
	require.Contains(t, res.Stderr, "bench lock: starting embedded etcd")
}
