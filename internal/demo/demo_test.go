package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/scenarios"
	"github.com/coordkit/coordkit/scenarios/report"
)

// fakeRegistry has the tour's scenarios as fakes that record the Env they
// were given: the story has a fenced rejection (or, with fencedAccepts, an
// acceptance) and an unfenced lost update; write-cost misses a timing
// claim when timingMisses. The real scenarios are tested in package
// scenarios (TestScenarioLockWithoutFencing, TestScenarioFencedSQL,
// TestScenarioMinorityPartition, TestScenarioWriteCost).
func fakeRegistry(t *testing.T, envs map[string]scenarios.Env, fencedAccepts, timingMisses bool) *scenarios.Registry {
	t.Helper()
	var mu sync.Mutex
	claims := []scenarios.Claim{{ID: "a", Kind: scenarios.Safety, Text: "claim a"}, {ID: "b", Kind: scenarios.Timing, Text: "claim b"}}
	r := scenarios.NewRegistry()
	for _, stop := range Tour() {
		name := stop.Name
		require.NoError(t, r.Register(scenarios.Scenario{Name: name, Summary: name, Claims: claims,
			Run: func(ctx context.Context, env scenarios.Env) (*report.Report, error) {
				mu.Lock()
				envs[name] = env
				mu.Unlock()
				rep := report.New(name, "")
				if name == StoryScenario {
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
			}}))
	}
	return r
}

// The tour: the story's steps, then each stop in order with its report
// written to Out, then Done; the config reaches every scenario's Env; a
// missed claim is ErrClaimFailed after the whole tour; a fenced resource
// that accepts the late write is ErrFencedAccepted, before the tour.
// (Was internal/cli's TestDemoTour.)
func TestTour(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                        string
		fencedAccepts, timingMisses bool
		want                        error
	}{
		{"passes", false, false, nil},
		{"a timing claim missed", false, true, ErrClaimFailed},
		{"fenced resource accepted", true, false, ErrFencedAccepted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			envs := map[string]scenarios.Env{}
			dir, out := t.TempDir(), filepath.Join(t.TempDir(), "tour")
			var progress bytes.Buffer
			cfg := Config{TTL: 3 * time.Second, DataDir: dir, Out: out, Seed: 7, Redis: "127.0.0.1:6379",
				Registry: fakeRegistry(t, envs, tc.fencedAccepts, tc.timingMisses), Progress: &progress}
			var events []Event
			err := Run(context.Background(), cfg, func(ev Event) error { events = append(events, ev); return nil })
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
			} else {
				require.NoError(t, err)
			}
			if tc.fencedAccepts {
				require.EqualError(t, err, "demo: the fenced resource accepted the late write — this is a bug, please report it")
				require.Len(t, envs, 1, "no tour after a broken story")
				return
			}
			var kinds, stops []string
			for _, ev := range events {
				b, err := json.Marshal(ev)
				require.NoError(t, err)
				var line struct{ Event, Name, Report string }
				require.NoError(t, json.Unmarshal(b, &line), string(b))
				kinds = append(kinds, line.Event)
				if s, ok := ev.(StopResult); ok {
					stops = append(stops, s.Name)
					require.Equal(t, filepath.Join(out, s.Name+".html"), line.Report)
					page, err := os.ReadFile(line.Report)
					require.NoError(t, err)
					require.Contains(t, string(page), s.Name)
				}
			}
			require.Equal(t, []string{"rejected", "accepted", "scenario", "scenario", "scenario", "scenario", "done"}, kinds)
			require.Equal(t, []string{"lock-without-fencing", "fenced-sql", "minority-partition", "write-cost"}, stops)
			require.Equal(t, !tc.timingMisses, events[len(events)-1].(Done).Passed)
			require.Contains(t, progress.String(), "playing the story (experiment lock-without-fencing) ...")
			require.Contains(t, progress.String(), "running experiment write-cost ...")
			for _, stop := range Tour() {
				env := envs[stop.Name]
				require.Equal(t, filepath.Join(dir, stop.Name), env.TempDir, "the demo keeps its data where it was told to")
				require.Equal(t, int64(7), env.Seed)
				require.Equal(t, 3*time.Second, env.LockTTL)
				require.Equal(t, "127.0.0.1:6379", env.Redis)
				require.Equal(t, scenarios.ScaleSmall, env.Scale)
				require.NotNil(t, env.StartEtcd)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := Config{TTL: 2 * time.Second, Out: "x"}
	require.NoError(t, ok.Validate())
	for _, ttl := range []time.Duration{0, time.Second, 1500 * time.Millisecond, 2500 * time.Millisecond} {
		c := ok
		c.TTL = ttl
		require.ErrorIs(t, c.Validate(), ErrTTL, "%s", ttl)
	}
	c := ok
	c.Out = ""
	require.ErrorIs(t, c.Validate(), ErrNoOut)
	c.StoryOnly = true
	require.NoError(t, c.Validate(), "the story alone writes no reports")
	require.ErrorIs(t, Run(context.Background(), Config{TTL: time.Second, StoryOnly: true}, nil), ErrTTL, "Run validates")
}

func TestTexts(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, StopResult{Name: "x", Intro: "line one\nline two", Report: "/r/x.html",
		Claims: []report.Claim{{Claim: "c1", Observed: "o1", Holds: true}, {Claim: "c2", Observed: "o2"}}}.WriteText(&b))
	require.Equal(t, "\nx\n  line one\n  line two\n  [holds] c1\n          observed: o1\n  [FAILS] c2\n          observed: o2\n  report: /r/x.html\n", b.String())
	b.Reset()
	require.NoError(t, Done{Reports: []string{"/r/a.html", "/r/b.html"}}.WriteText(&b))
	require.Contains(t, b.String(), "The reports are in /r — open them in a browser.")
	b.Reset()
	require.NoError(t, StoryStep{report.Step{Event: report.EventHeading, Text: "Act 1"}}.WriteText(&b))
	require.Equal(t, "\nAct 1\n", b.String())
}

// storyText plays the real story alone and returns its narrative.
func storyText(t *testing.T, ctx context.Context, dataDir string) string {
	t.Helper()
	var b bytes.Buffer
	err := Run(ctx, Config{TTL: 2 * time.Second, StoryOnly: true, DataDir: dataDir, Seed: 1},
		func(ev Event) error { return ev.WriteText(&b) })
	require.NoError(t, err)
	return b.String()
}

// The real story: the fenced resource refuses the late write, the
// unfenced one loses B's deposit. (Was internal/cli's TestDemoStoryOnly.)
func TestStoryOnly(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	text := storyText(t, ctx, "")
	require.Contains(t, text, "409 stale fencing token")
	require.Contains(t, text, "B's deposit of 30 is silently lost", "the unfenced resource's lost update is told")
	require.Contains(t, text, "What happened")
	require.NotContains(t, text, "minority-partition")
}

// Issue 25 item 11: a second 'coordctl demo --data-dir D' found the first
// run's fenced resource (floor 3) and exited 5 on its own setup write
// (token 1). Each run gets fresh directories under D now. (Was
// internal/cli's TestDemoDataDirRunTwice.)
func TestDataDirRunTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: plays the story twice")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	for run := 1; run <= 2; run++ {
		require.Contains(t, storyText(t, ctx, dir), "409 stale fencing token", "run %d", run)
	}
}
