package root

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/nettest"
)

func TestScenarioCmdList(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := runInProcess(ctx, nil, "scenario", "list", "-w", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var items []map[string]string
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &items))
	require.NotEmpty(t, items)
	names := map[string]bool{}
	for _, it := range items {
		assert.Len(t, it, 2, "exactly name and summary")
		assert.NotEmpty(t, it["summary"])
		names[it["name"]] = true
	}
	assert.True(t, names["lamport-clocks"])

	res = runInProcess(ctx, nil, "scenario", "list")
	require.Equal(t, 0, res.Code)
	assert.Contains(t, res.Stdout, "lamport-clocks")
}

func TestScenarioCmdRunLamportClocks(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	page := filepath.Join(t.TempDir(), "r.html")
	res := runInProcess(ctx, nil, "scenario", "run", "lamport-clocks", "--seed", "3", "--report", page, "-w", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got struct {
		Name   string `json:"name"`
		Passed bool   `json:"passed"`
		Seed   int64  `json:"seed"`
		Claims []struct {
			Claim, Expected, Observed string
			Holds                     bool
		} `json:"claims"`
		Metrics map[string]float64 `json:"metrics"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got), res.Stdout)
	assert.Equal(t, "lamport-clocks", got.Name)
	assert.True(t, got.Passed)
	assert.Equal(t, int64(3), got.Seed)
	assert.GreaterOrEqual(t, len(got.Claims), 2)
	assert.Contains(t, got.Metrics, "order_violations")
	assert.Contains(t, res.Stderr, "scenario lamport-clocks: PASS")
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(b, []byte("<!DOCTYPE html>")))
	assert.NotContains(t, string(b), "<script")

	res = runInProcess(ctx, nil, "scenario", "run", "lamport-clocks")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.True(t, strings.HasPrefix(res.Stdout, "PASS  lamport-clocks\n"), res.Stdout)
	assert.Contains(t, res.Stdout, "(3,B)")
}

func TestScenarioCmdUsage(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown name lists names", []string{"scenario", "run", "no-such"}, "scenarios are: "},
		{"no name", []string{"scenario", "run"}, "give a scenario name or --all"},
		{"name and all", []string{"scenario", "run", "lamport-clocks", "--all"}, "not both"},
		{"bad scale", []string{"scenario", "run", "lamport-clocks", "--scale", "huge"}, "invalid --scale"},
		{"bad report", []string{"scenario", "run", "lamport-clocks", "--report", "x.pdf"}, "invalid --report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runInProcess(ctx, nil, tc.args...)
			assert.Equal(t, cmdutil.ExitUsage, res.Code)
			assert.Contains(t, res.Stderr, tc.want)
			if tc.name == "unknown name lists names" {
				assert.Contains(t, res.Stderr, "lamport-clocks")
			}
		})
	}
}

// --redis with an address nobody answers on: the scenario fails (exit 1)
// naming it, without starting etcd.
func TestScenarioCmdRedisUnreachable(t *testing.T) {
	t.Parallel()
	addr := nettest.ClosedAddr(t)
	res := runInProcess(context.Background(), nil, "scenario", "run", "lock-without-fencing", "--redis", addr)
	require.Equal(t, cmdutil.ExitError, res.Code, res.Stderr)
	assert.Contains(t, res.Stderr, addr)
	assert.Contains(t, res.Stdout+res.Stderr, "cannot reach redis at "+addr)
	assert.Contains(t, res.Stdout+res.Stderr, "connection refused")
	assert.NotContains(t, res.Stdout+res.Stderr, "did not answer", "it answered at once: nothing listens there")
}
