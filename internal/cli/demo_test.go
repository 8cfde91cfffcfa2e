package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDemoRunsOnEmbeddedEtcdAndCleansUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir, out := t.TempDir(), t.TempDir()
	res := runInProcess(ctx, nil, "demo", "-w", "json", "--data-dir", dir, "--out", out)
	require.Equal(t, exitOK, res.Code, res.Stderr)
	var rejected, lostUpdate bool
	var experiments []string
	sc := bufio.NewScanner(strings.NewReader(res.Stdout))
	for sc.Scan() {
		var step struct {
			Actor, Event, Name, Report string
			Passed                     bool
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &step), sc.Text())
		rejected = rejected || step.Actor == "fenced" && step.Event == "rejected"
		lostUpdate = lostUpdate || step.Actor == "unfenced" && step.Event == "accepted"
		if step.Event == "scenario" {
			require.True(t, step.Passed, "experiment %s", step.Name)
			page, err := os.ReadFile(step.Report)
			require.NoError(t, err)
			require.Contains(t, string(page), "<svg")
			experiments = append(experiments, step.Name)
		}
	}
	require.True(t, rejected, "the fenced resource must reject the late write")
	require.True(t, lostUpdate, "the unfenced resource must show the lost update")
	require.Equal(t, []string{"lock-without-fencing", "minority-partition", "write-cost"}, experiments)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries, "the demo keeps its data where it was told to")
}

func TestDemoStoryOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := runInProcess(ctx, nil, "demo", "--story-only")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "409 stale fencing token")
	require.NotContains(t, res.Stdout, "minority-partition")
}

func TestDemoRejectsBadTTL(t *testing.T) {
	res := runInProcess(context.Background(), nil, "demo", "--ttl", "1500ms")
	require.Equal(t, exitUsage, res.Code)
	require.Contains(t, res.Stderr, "--ttl")
}
