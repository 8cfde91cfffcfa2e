package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/scenarios"
	"github.com/coordkit/coordkit/scenarios/report"
)

// demoRegistry has the tour's scenarios as fakes that record the Env they
// were given: the story has a fenced rejection (or, with fencedAccepts, an
// acceptance) and an unfenced lost update; write-cost misses a timing
// claim when timingMisses. The real scenarios are tested in package
// scenarios (TestScenarioLockWithoutFencing, TestScenarioFencedSQL,
// TestScenarioMinorityPartition, TestScenarioWriteCost).
func demoRegistry(t *testing.T, envs map[string]scenarios.Env, fencedAccepts, timingMisses bool) *scenarios.Registry {
	t.Helper()
	var mu sync.Mutex
	r := scenarios.NewRegistry()
	for _, stop := range tourStops {
		name := stop.name
		mustRegister(t, r, scenarios.Scenario{Name: name, Summary: name, Claims: fakeClaims,
			Run: func(ctx context.Context, env scenarios.Env) (*report.Report, error) {
				mu.Lock()
				envs[name] = env
				mu.Unlock()
				rep := report.New(name, "")
				if name == storyScenario {
					fenced := "rejected"
					if fencedAccepts {
						fenced = "accepted"
					}
					rep.Steps = append(rep.Steps,
						report.Step{Actor: "fenced", Event: fenced, Text: "A's late write"},
						report.Step{Actor: "unfenced", Event: "accepted", Text: "A's late write"})
				}
				rep.CheckID("a", "1", "1", true)
				rep.CheckID("b", "2", "2", !(timingMisses && name == "write-cost"))
				return rep, nil
			}})
	}
	return r
}

// The tour: the story's steps, then each stop in order with its report
// written to --out, then "done"; the flags reach every scenario's Env; a
// missed claim makes exit 1 after the whole tour; a fenced resource that
// accepts the late write is reported as a bug.
func TestDemoTour(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                        string
		fencedAccepts, timingMisses bool
		code                        int
	}{
		{"passes", false, false, exitOK},
		{"a timing claim missed", false, true, exitError},
		{"fenced resource accepted", true, false, exitError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			envs := map[string]scenarios.Env{}
			reg := demoRegistry(t, envs, tc.fencedAccepts, tc.timingMisses)
			dir, out := t.TempDir(), filepath.Join(t.TempDir(), "tour")
			var stdout, stderr bytes.Buffer
			f := newFactory(ioStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr})
			f.Global.WriteOut = formatJSON
			cmd := newDemoCmdWith(f, reg)
			cmd.SetArgs([]string{"--data-dir", dir, "--out", out, "--seed", "7", "--ttl", "3s", "--redis", "127.0.0.1:6379"})
			cmd.SetOut(&stderr)
			cmd.SetErr(&stderr)
			err := cmd.ExecuteContext(context.Background())
			require.Equal(t, tc.code, exitCode(err), "%v; stderr: %s", err, stderr.String())
			if tc.fencedAccepts {
				require.ErrorContains(t, err, "the fenced resource accepted the late write")
				require.Len(t, envs, 1, "no tour after a broken story")
				return
			}
			var events, experiments []string
			sc := bufio.NewScanner(&stdout)
			for sc.Scan() {
				var line struct{ Event, Name, Report string }
				require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
				events = append(events, line.Event)
				if line.Event == "scenario" {
					experiments = append(experiments, line.Name)
					require.Equal(t, filepath.Join(out, line.Name+".html"), line.Report)
					page, err := os.ReadFile(line.Report)
					require.NoError(t, err)
					require.Contains(t, string(page), line.Name)
				}
			}
			require.Equal(t, []string{"rejected", "accepted", "scenario", "scenario", "scenario", "scenario", "done"}, events)
			require.Equal(t, []string{"lock-without-fencing", "fenced-sql", "minority-partition", "write-cost"}, experiments)
			for _, stop := range tourStops {
				env := envs[stop.name]
				require.Equal(t, filepath.Join(dir, stop.name), env.TempDir, "the demo keeps its data where it was told to")
				require.Equal(t, int64(7), env.Seed)
				require.Equal(t, 3*time.Second, env.LockTTL)
				require.Equal(t, "127.0.0.1:6379", env.Redis)
				require.Equal(t, scenarios.ScaleSmall, env.Scale)
				require.NotNil(t, env.StartEtcd)
			}
		})
	}
}

func TestDemoStoryOnly(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	res := runInProcess(context.Background(), nil, "demo", "--ttl", "1500ms")
	require.Equal(t, exitUsage, res.Code)
	require.Contains(t, res.Stderr, "--ttl")
}
