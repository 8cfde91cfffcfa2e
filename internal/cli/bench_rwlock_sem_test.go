package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBenchRWLockAndSemBadFlags(t *testing.T) {
	cases := [][]string{
		{"bench", "rwlock", "--batches", "0"},
		{"bench", "rwlock", "--readers", "65"},
		{"bench", "rwlock", "--handoffs", "0"},
		{"bench", "rwlock", "--duration", "0s"},
		{"bench", "rwlock", "--hold", "-1ms"},
		{"bench", "sem", "--limits", "0"},
		{"bench", "sem", "--duration", "0s"},
		{"bench", "sem", "--handoffs", "0"},
	}
	for _, args := range cases {
		res := runInProcess(context.Background(), nil, args...)
		require.Equal(t, exitUsage, res.Code, "%v: %s", args, res.Stderr)
		require.Contains(t, res.Stderr, "Usage:")
	}
}

// Tiny runs: the JSON contract, not performance.
func TestBenchRWLockAndSemJSON(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type row struct {
		Metric          string
		Coordkit        float64
		EtcdRecipes     *float64 `json:"etcd_recipes"`
		EtcdConcurrency *float64 `json:"etcd_concurrency"`
		Unit            string
	}
	var out struct {
		Benchmark string
		Fsync     bool
		Rows      []row
	}
	res := runInProcess(ctx, nil, "-w", "json", "bench", "rwlock", "--unsafe-no-fsync",
		"--batches", "2", "--readers", "2", "--handoffs", "2", "--duration", "300ms")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &out), res.Stdout)
	require.Equal(t, "rwlock", out.Benchmark)
	require.False(t, out.Fsync)
	require.Len(t, out.Rows, 6)
	for _, r := range out.Rows {
		require.GreaterOrEqual(t, r.Coordkit, 0.0, r.Metric)
		require.NotNil(t, r.EtcdRecipes, r.Metric)
	}
	require.Contains(t, res.Stderr, "bench rwlock: starting embedded etcd")

	out.Rows = nil
	res = runInProcess(ctx, nil, "-w", "json", "bench", "sem", "--unsafe-no-fsync",
		"--limits", "1,2", "--handoffs", "2", "--duration", "300ms")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &out), res.Stdout)
	require.Equal(t, "sem", out.Benchmark)
	var metrics []string
	for _, r := range out.Rows {
		metrics = append(metrics, r.Metric)
		require.GreaterOrEqual(t, r.Coordkit, 0.0, r.Metric)
	}
	require.Equal(t, []string{"limit_1_acq_per_s", "limit_2_acq_per_s", "handoff_p50_ms", "handoff_p99_ms"}, metrics)
	require.Nil(t, out.Rows[1].EtcdConcurrency, "etcd has no semaphore of limit 2")
}
