package cli

import (
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/redislock/redistest"
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
	require.NotContains(t, res.Stdout, "redsync", "without --against the output is as before")
}

func TestBenchLockAgainstBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "lock", "--against", "nosuch"},
		{"bench", "lock", "--against", "redsync"},
		{"bench", "lock", "--redis", "127.0.0.1:6379"},
	} {
		res := runInProcess(context.Background(), nil, args...)
		require.Equal(t, exitUsage, res.Code, "%v: %s", args, res.Stderr)
		require.Contains(t, res.Stderr, "Usage:")
	}
}

// An address nobody answers on: exit 1 naming it, before etcd starts.
func TestBenchLockRedisUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	res := runInProcess(context.Background(), nil, "bench", "lock", "--against", "redsync", "--redis", addr)
	require.Equal(t, exitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, addr)
	require.Contains(t, res.Stderr, "redis unreachable")
	require.NotContains(t, res.Stderr, "starting embedded etcd")
}

// A tiny run against redsync on the test Redis: the JSON rows carry the
// redsync keys; not performance.
func TestBenchLockAgainstRedsyncJSON(t *testing.T) {
	addr := redistest.Addr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := runInProcess(ctx, nil, "-w", "json", "bench", "lock", "--unsafe-no-fsync", "--against", "redsync", "--redis", addr,
		"--iterations", "5", "--handoffs", "3", "--duration", "300ms", "--workers", "2")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	var out struct {
		Redis string
		Rows  []map[string]any
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &out), res.Stdout)
	require.Equal(t, addr, out.Redis)
	var metrics []string
	for _, r := range out.Rows {
		metrics = append(metrics, r["metric"].(string))
		for _, k := range []string{"coordkit", "etcd_concurrency", "redsync", "redsync_min_retry"} {
			require.Contains(t, r, k, r["metric"])
		}
	}
	require.Equal(t, []string{"uncontended_p50_ms", "handoff_p50_ms", "handoff_p99_ms", "contended_2_per_s", "contended_2_lock_failed"}, metrics)
	require.Contains(t, res.Stderr, "deleted at the end")
}
