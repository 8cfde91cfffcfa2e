package labbench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLabBenchThroughputRuns(t *testing.T) {
	rows, err := Throughput(context.Background(), ThroughputOptions{Nodes: []int{3}, Writers: []int{1, 8}, Duration: 200 * time.Millisecond})
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, "n3_sequential_writes_per_s", rows[0].Metric)
	require.Equal(t, "n3_concurrent8_writes_per_s", rows[1].Metric)
	for _, r := range rows {
		require.Positive(t, r.Lab)
		require.Positive(t, r.BareRaft)
	}
}

func TestLabBenchLatencyNearModel(t *testing.T) {
	rows, err := Latency(context.Background(), ModelOptions{
		Nodes: []int{3}, Delays: []time.Duration{10 * time.Millisecond}, Fsync: 5 * time.Millisecond, Writes: 10,
	})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, 30.0, rows[0].ModelMs)
	// Loose under -race on a shared machine; bench lab --model reports the real figure.
	require.GreaterOrEqual(t, rows[0].Ratio, 0.95, "%+v", rows[0])
	require.Less(t, rows[0].Ratio, 1.5, "%+v", rows[0])
}
