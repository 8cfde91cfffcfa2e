package labbench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/bench"
)

func TestWithModeDefaults(t *testing.T) {
	base := Options{Nodes: []int{3, 5}, Writers: []int{1, 64}, Duration: 2 * time.Second}
	given := func(flags ...string) func(string) bool {
		return func(f string) bool {
			for _, g := range flags {
				if g == f {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name  string
		o     Options
		given func(string) bool
		want  Options
	}{
		{"throughput keeps the flags", base, nil, base},
		{"model: 3,5,7 nodes", Options{Model: true, Nodes: []int{3, 5}}, nil, Options{Model: true, Nodes: []int{3, 5, 7}}},
		{"model, nodes given", Options{Model: true, Nodes: []int{3}}, given("nodes"), Options{Model: true, Nodes: []int{3}}},
		{"ui", Options{UI: true, Nodes: []int{3, 5}, Writers: []int{1, 64}, Duration: 2 * time.Second}, nil,
			Options{UI: true, Nodes: []int{5}, Writers: []int{16}, Duration: 6 * time.Second}},
		{"ui, all given", Options{UI: true, Nodes: []int{3}, Writers: []int{8}, Duration: 4 * time.Second}, given("nodes", "writers", "duration"),
			Options{UI: true, Nodes: []int{3}, Writers: []int{8}, Duration: 4 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.o.WithModeDefaults(tc.given))
		})
	}
}

// The --model text form: title, header, one row whose model is 2d+2f.
// Moved from internal/cli's TestBenchLabModelSimple.
func TestModelTableText(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := Options{Model: true, Nodes: []int{3}, Delays: []time.Duration{2 * time.Millisecond}, Fsync: 2 * time.Millisecond, Writes: 5, Seed: 1}
	res, err := Run(ctx, o)
	require.NoError(t, err)
	var text bytes.Buffer
	require.NoError(t, bench.WriteTable(&text, res.Table()))
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	require.Len(t, lines, 3, text.String()) // title, header, one row
	require.Contains(t, lines[0], "model 2d+2f")
	require.Equal(t, []string{"metric", "measured", "model", "unit", "measured/model"}, strings.Fields(lines[1]))
	row := strings.Fields(lines[2])
	require.Equal(t, "n3_delay2ms_write_p50_ms", row[0])
	require.Equal(t, "8.00", row[2]) // 2*2ms + 2*2ms
	require.Equal(t, "ms", row[3])
}
