package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBenchLabJSON(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := runInProcess(ctx, nil, "bench", "lab", "--duration", "300ms", "--nodes", "3", "--writers", "1,4", "-w", "json")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	var out struct {
		Benchmark string
		Rows      []struct {
			Metric   string  `json:"metric"`
			Lab      float64 `json:"lab"`
			BareRaft float64 `json:"bare_raft"`
			Unit     string  `json:"unit"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &out))
	require.Equal(t, "lab", out.Benchmark)
	require.Len(t, out.Rows, 2)
	require.Equal(t, "n3_sequential_writes_per_s", out.Rows[0].Metric)
	require.Equal(t, "n3_concurrent4_writes_per_s", out.Rows[1].Metric)
	for _, r := range out.Rows {
		require.True(t, strings.HasSuffix(r.Metric, "_writes_per_s"))
		require.Positive(t, r.Lab)
		require.Positive(t, r.BareRaft)
	}
}

func TestBenchLabModelSimple(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := runInProcess(ctx, nil, "bench", "lab", "--model", "--nodes", "3", "--delays", "2ms", "--writes", "5")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "MODEL 2d+2f")
	require.Contains(t, res.Stdout, "8.00ms") // 2*2ms + 2*2ms

	require.Equal(t, exitUsage, runInProcess(ctx, nil, "bench", "lab", "--nodes", "9").Code)
	require.Equal(t, exitUsage, runInProcess(ctx, nil, "bench", "lab", "--duration", "0s").Code)
}
