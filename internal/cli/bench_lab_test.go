package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/bench/benchtest"
)

func TestBenchLabJSON(t *testing.T) {
	t.Parallel()
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
		// A rate over 300ms may be 0 on a starved machine, never negative.
		benchtest.PositiveOrRate(t, r.Metric, r.Unit, r.Lab)
		benchtest.PositiveOrRate(t, r.Metric, r.Unit, r.BareRaft)
	}
}

func TestBenchLabModelSimple(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := runInProcess(ctx, nil, "bench", "lab", "--model", "--nodes", "3", "--delays", "2ms", "--writes", "5")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	require.Len(t, lines, 3, res.Stdout) // title, header, one row
	require.Contains(t, lines[0], "model 2d+2f")
	require.Equal(t, []string{"metric", "measured", "model", "unit", "measured/model"}, strings.Fields(lines[1]))
	row := strings.Fields(lines[2])
	require.Equal(t, "n3_delay2ms_write_p50_ms", row[0])
	require.Equal(t, "8.00", row[2]) // 2*2ms + 2*2ms
	require.Equal(t, "ms", row[3])

	require.Equal(t, exitUsage, runInProcess(ctx, nil, "bench", "lab", "--nodes", "9").Code)
	require.Equal(t, exitUsage, runInProcess(ctx, nil, "bench", "lab", "--duration", "0s").Code)
}
