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

	"github.com/coordkit/coordkit/scenarios/report"
)

func TestDemoRunsOnEmbeddedEtcdAndCleansUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir, out := t.TempDir(), t.TempDir()
	res := runInProcess(ctx, nil, "demo", "-w", "json", "--data-dir", dir, "--out", out)
	var rejected, lostUpdate bool
	var experiments []string
	var timingFailed int
	sc := bufio.NewScanner(strings.NewReader(res.Stdout))
	for sc.Scan() {
		var step struct {
			Actor, Event, Name, Report string
			Passed                     bool
			Claims                     []report.Claim
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &step), sc.Text())
		rejected = rejected || step.Actor == "fenced" && step.Event == "rejected"
		lostUpdate = lostUpdate || step.Actor == "unfenced" && step.Event == "accepted"
		if step.Event == "scenario" {
			// Safety claims must hold; a timing claim (write-cost's latency
			// model) may miss on a loaded machine, and then the demo exits 1.
			for _, c := range step.Claims {
				switch {
				case c.Holds:
				case c.Kind == "timing":
					timingFailed++
					t.Logf("timing claim %s/%s missed (not a failure): %s", step.Name, c.ID, c.Observed)
				default:
					t.Errorf("experiment %s: claim %s (%s) does not hold: %s", step.Name, c.ID, c.Kind, c.Observed)
				}
			}
			page, err := os.ReadFile(step.Report)
			require.NoError(t, err)
			require.Contains(t, string(page), "<svg")
			experiments = append(experiments, step.Name)
		}
	}
	if timingFailed == 0 {
		require.Equal(t, exitOK, res.Code, res.Stderr)
	} else {
		require.Equal(t, exitError, res.Code, res.Stderr)
	}
	require.True(t, rejected, "the fenced resource must reject the late write")
	require.True(t, lostUpdate, "the unfenced resource must show the lost update")
	require.Equal(t, []string{"lock-without-fencing", "fenced-sql", "minority-partition", "write-cost"}, experiments)
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
	require.Contains(t, res.Stdout, "B's deposit of 30 is silently lost", "the unfenced resource's lost update is told")
	require.Contains(t, res.Stdout, "What happened")
	require.NotContains(t, res.Stdout, "minority-partition")
}

func TestDemoRejectsBadTTL(t *testing.T) {
	res := runInProcess(context.Background(), nil, "demo", "--ttl", "1500ms")
	require.Equal(t, exitUsage, res.Code)
	require.Contains(t, res.Stderr, "--ttl")
}
