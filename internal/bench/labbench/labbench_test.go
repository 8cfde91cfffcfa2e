package labbench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/bench/benchtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestValidate(t *testing.T) {
	for name, o := range map[string]Options{
		"nine nodes":       {Nodes: []int{9}, Writers: []int{1}, Duration: time.Second},
		"zero duration":    {Nodes: []int{3}, Writers: []int{1}},
		"zero writers":     {Nodes: []int{3}, Writers: []int{0}, Duration: time.Second},
		"model, no writes": {Model: true, Nodes: []int{3}},
		"model, 0 nodes":   {Model: true, Nodes: []int{0}, Writes: 1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Run(context.Background(), o)
			require.ErrorIs(t, err, ErrOptions)
		})
	}
}

func TestThroughputRuns(t *testing.T) {
	var progress bytes.Buffer
	res, err := Run(context.Background(), Options{Nodes: []int{3}, Writers: []int{1, 8}, Duration: 200 * time.Millisecond, Progress: &progress})
	require.NoError(t, err)
	require.Contains(t, progress.String(), "bench lab: 3 nodes: starting lab and bare raft\n")
	require.Equal(t, "lab", res.Benchmark)
	require.Len(t, res.Throughput, 2)
	require.Equal(t, "n3_sequential_writes_per_s", res.Throughput[0].Metric)
	require.Equal(t, "n3_concurrent8_writes_per_s", res.Throughput[1].Metric)
	for _, r := range res.Throughput {
		// A rate over 200ms may be 0 on a starved machine, never negative.
		benchtest.PositiveOrRate(t, r.Metric, r.Unit, r.Lab)
		benchtest.PositiveOrRate(t, r.Metric, r.Unit, r.BareRaft)
		require.Equal(t, "writes/s", r.Unit)
	}

	b, err := json.Marshal(res)
	require.NoError(t, err)
	var out struct {
		Benchmark string
		Rows      []map[string]any
	}
	require.NoError(t, json.Unmarshal(b, &out))
	require.Equal(t, "lab", out.Benchmark)
	require.Len(t, out.Rows, 2)
	for _, r := range out.Rows {
		require.ElementsMatch(t, []string{"metric", "lab", "bare_raft", "unit"}, keys(r))
	}

	tab := res.Table()
	require.Equal(t, []string{"lab", "bare_raft"}, tab.Columns)
	v, ok := tab.Value("n3_sequential_writes_per_s", "bare_raft")
	require.True(t, ok)
	require.Equal(t, res.Throughput[0].BareRaft, v)
}

func TestLatencyAtLeastModel(t *testing.T) {
	res, err := Run(context.Background(), Options{
		Model: true, Nodes: []int{3}, Delays: []time.Duration{10 * time.Millisecond}, Fsync: 5 * time.Millisecond, Writes: 10,
	})
	require.NoError(t, err)
	require.Equal(t, "lab-model", res.Benchmark)
	require.Len(t, res.Model, 1)
	row := res.Model[0]
	require.Equal(t, 30.0, row.ModelMs)
	// Writes counts the writes that committed: on a starved machine a
	// leader may lose its leadership before one commits (9 of 10 under a
	// CPU hog), and the latency is of those that did.
	require.Positive(t, row.Writes)
	require.LessOrEqual(t, row.Writes, 10)
	// The model is what the write path must wait for at least; how far
	// above it a loaded machine lands is bench lab --model's to report.
	require.GreaterOrEqual(t, row.Ratio, 0.95, "%+v", row)

	b, err := json.Marshal(res)
	require.NoError(t, err)
	var out struct {
		Benchmark string
		Rows      []map[string]any
	}
	require.NoError(t, json.Unmarshal(b, &out))
	require.Equal(t, "lab-model", out.Benchmark)
	require.ElementsMatch(t, []string{"nodes", "delay_ms", "fsync_ms", "measured_p50_ms", "model_ms", "ratio", "writes"}, keys(out.Rows[0]))

	var text bytes.Buffer
	require.NoError(t, bench.WriteTable(&text, res.Table()))
	require.Contains(t, text.String(), "n3_delay10ms_write_p50_ms")
	require.Contains(t, text.String(), "measured/model")
}

// cancelOn cancels when a progress line contains what.
type cancelOn struct {
	what   string
	cancel context.CancelFunc
}

func (c cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.what) {
		c.cancel()
	}
	return len(p), nil
}

func TestRunStopsWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// An hour-long measurement, canceled as it starts.
	_, err := Run(ctx, Options{Nodes: []int{3}, Writers: []int{1}, Duration: time.Hour,
		Progress: cancelOn{what: "n3_sequential_writes_per_s", cancel: cancel}})
	require.ErrorIs(t, err, context.Canceled)
	_, err = Run(ctx, Options{Model: true, Nodes: []int{3}, Delays: []time.Duration{time.Millisecond}, Writes: 1_000_000})
	require.ErrorIs(t, err, context.Canceled)
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The page benchmark runs and reports its rows in the table model; the
// figures themselves depend on the machine.
func TestUIRuns(t *testing.T) {
	var progress bytes.Buffer
	res, err := Run(context.Background(), Options{UI: true, Nodes: []int{3}, Writers: []int{2}, Duration: 500 * time.Millisecond, Progress: &progress})
	require.NoError(t, err)
	require.Equal(t, "lab-ui", res.Benchmark)
	metrics := map[string]UIRow{}
	for _, r := range res.UI {
		metrics[r.Metric] = r
	}
	tput := metrics["n3_concurrent2_writes_per_s"]
	require.Positive(t, tput.PageAttached)
	require.NotNil(t, tput.NoPage)
	require.Positive(t, *tput.NoPage)
	require.Positive(t, metrics["stream_events_per_s"].PageAttached)
	require.Positive(t, metrics["change_to_status_event_p50_ms"].PageAttached)
	require.Nil(t, metrics["post_to_command_event_p50_ms"].NoPage)

	var buf bytes.Buffer
	require.NoError(t, bench.WriteTable(&buf, res.Table()))
	require.Contains(t, buf.String(), "page_attached/no_page")
	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.Contains(t, string(b), `"benchmark":"lab-ui"`)

	_, err = Run(context.Background(), Options{UI: true, Model: true, Nodes: []int{3}, Duration: time.Second})
	require.ErrorIs(t, err, ErrOptions)
}
