package safety

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/sweep"
)

func suiteBase() Config {
	return Config{Target: TargetLock, Duration: 5 * time.Second, Clients: 3, TTL: time.Second, Fencing: true}
}

// The comparison's three runs of one seed, under the same faults (moved
// from internal/cli's TestCheckRedsync, which asserted them of a real run).
func TestSuiteArms(t *testing.T) {
	t.Parallel()
	modes := func(cs []Config) (out []string) {
		for _, c := range cs {
			out = append(out, armName(c))
		}
		return out
	}
	b := suiteBase()
	b.Lock, b.RedisAddr = LockRedsync, "r:1"
	arms := Suite{Base: b}.Arms(9)
	require.Equal(t, []string{"redsync-unfenced", "redsync-if-match", "coordkit-fenced"}, modes(arms))
	for _, a := range arms {
		require.Equal(t, int64(9), a.Seed)
		require.Equal(t, []FaultKind{FaultFreezeClient}, a.Kinds, "only the fault that applies to Redis")
	}
	require.Empty(t, arms[2].RedisAddr)
	b.Coordctl = "coordctl"
	require.Equal(t, []FaultKind{FaultFreezeClient, FaultSigstop}, Suite{Base: b}.Arms(1)[0].Kinds)
	// Python clients: redis-py's Lock in redsync's runs, the coordination
	// API in coordkit's, kill-client in all three.
	b.Python = "python3"
	for _, a := range (Suite{Base: b}).Arms(1) {
		require.Equal(t, []FaultKind{FaultFreezeClient, FaultSigstop, FaultKillClient}, a.Kinds)
		require.Equal(t, "python3", a.Python)
		a.DataDir = "d"
		require.NoError(t, a.Validate())
	}

	b = suiteBase()
	b.Lock, b.SQLDSN = LockPGAdvisory, "postgres://x"
	arms = Suite{Base: b}.Arms(1)
	require.Equal(t, []string{"pg-advisory-unfenced", "pg-advisory-fenced", "coordkit-fenced"}, modes(arms))
	for _, a := range arms {
		require.Equal(t, ResourceSQL, a.Resource)
		require.Equal(t, "postgres", a.SQLDriver)
		a.DataDir = "d"
		require.NoError(t, a.Validate())
	}
	require.Len(t, Suite{Base: suiteBase()}.Arms(1), 1)
}

func TestSuiteValidate(t *testing.T) {
	t.Parallel()
	ok := Suite{Base: suiteBase(), Seeds: []int64{1}}
	require.NoError(t, ok.Validate())
	// A recorded schedule replays redsync's three runs: a failed one's
	// replay line gives one.
	replay := ok
	replay.Base.Lock, replay.Base.RedisAddr = LockRedsync, "r:1"
	replay.Base.Schedule = []Step{{Kind: FaultFreezeClient, Client: 1, Hold: time.Second, At: time.Second}}
	require.NoError(t, replay.Validate())
	full := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(full, "x"), nil, 0o644))
	given := func(names ...string) func(string) bool {
		return func(n string) bool { return slices.Contains(names, n) }
	}
	for name, mod := range map[string]func(s *Suite){
		"short":          func(s *Suite) { s.Base.Duration = 4 * time.Second },
		"no seeds":       func(s *Suite) { s.Seeds = nil },
		"1001 seeds":     func(s *Suite) { s.Seeds = make([]int64, 1001) },
		"seed twice":     func(s *Suite) { s.Seeds = []int64{3, 1, 3} },
		"seed and seeds": func(s *Suite) { s.Given = given("seed", "seeds") },
		"limit":          func(s *Suite) { s.Given = given("limit") },
		"dsn":            func(s *Suite) { s.Given = given("dsn") },
		"redis":          func(s *Suite) { s.Base.RedisAddr = "r:1" },
		"redsync unfenced": func(s *Suite) {
			s.Base.Lock, s.Base.RedisAddr, s.Base.Fencing = LockRedsync, "r:1", false
		},
		"redsync shrink": func(s *Suite) { s.Base.Lock, s.Base.RedisAddr, s.Shrink, s.ShrinkRuns = LockRedsync, "r:1", true, 1 },
		"pg no dsn":      func(s *Suite) { s.Base.Lock = LockPGAdvisory },
		"pg semaphore":   func(s *Suite) { s.Base.Lock, s.Base.SQLDSN, s.Base.Kind = LockPGAdvisory, "x", KindSemaphore },
		"pg resource":    func(s *Suite) { s.Base.Lock, s.Base.SQLDSN, s.Given = LockPGAdvisory, "x", given("resource") },
		"schedule seeds": func(s *Suite) { s.Given = given("schedule", "seeds") },
		"shrink seeds":   func(s *Suite) { s.Shrink, s.ShrinkRuns, s.Given = true, 3, given("seeds") },
		"shrink runs":    func(s *Suite) { s.Shrink, s.ShrinkRuns = true, 21 },
		"history":        func(s *Suite) { s.History, s.Seeds = "h.json", []int64{1, 2} },
		"parallel 0":     func(s *Suite) { s.Given = given("parallel") },
		"parallel -1":    func(s *Suite) { s.Parallel = -1 },
		"data dir":       func(s *Suite) { s.Base.DataDir = full },
		"config":         func(s *Suite) { s.Base.Clients = 1 },
	} {
		s := ok
		mod(&s)
		err := s.Validate()
		require.ErrorIs(t, err, ErrBadConfig, name)
		var u interface{ Usage() string }
		require.True(t, errors.As(err, &u), "%s: %v names its flags", name, err)
	}
}

// TestRunSuiteOnEngine: the suite's runs are the sweep engine's trials
// (its JSON lines, one per (seed, arm)), in seed-then-arm order with one
// at a time, each handed over once with its verdict; the summary counts
// them; a run's error stops the suite.
func TestRunSuiteOnEngine(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ran []Config
	fake := func(_ context.Context, c Config) (Report, History, error) {
		mu.Lock()
		ran = append(ran, c)
		mu.Unlock()
		if c.Seed == 13 {
			return Report{}, History{}, ErrRedisUnreachable
		}
		return NewReport(c, time.Second, map[string]int{"freeze-client": 2}, Result{Linearizable: true}), History{}, nil
	}
	b := suiteBase()
	b.Lock, b.RedisAddr, b.Fencing = LockRedsync, "r:1", true
	var results, progress bytes.Buffer
	var got []SuiteRun
	s := Suite{Base: b, Seeds: []int64{5, 6}, Results: &results, Progress: &progress, Run: fake}
	sum, err := RunSuite(context.Background(), s, func(r SuiteRun) error { got = append(got, r); return nil })
	require.NoError(t, err)
	require.Equal(t, Summary{Summary: true, Runs: 6, Faults: 12}, sum)
	require.Len(t, got, 6)
	for i, r := range got {
		require.Equal(t, i+1, r.N)
		require.Equal(t, i == 0, r.First)
		require.Equal(t, int64(5+i/3), r.Config.Seed, "seed-major order")
		require.Equal(t, s.Arms(0)[i%3].Mode(), r.Config.Mode())
		require.NotEmpty(t, r.Config.DataDir, "a directory per run")
		require.Contains(t, r.Verdict.Replay, "--lock redsync --redis r:1")
	}
	lines, err := sweep.ReadResults(&results)
	require.NoError(t, err)
	require.Len(t, lines, 6, "a results line per run")
	require.Equal(t, "lock-safety", lines[0].Experiment)
	require.Equal(t, sweep.Point{"seed": "5", "arm": "redsync-unfenced"}, lines[0].Point)
	require.Equal(t, float64(2), lines[0].Metrics["faults"])
	require.Contains(t, progress.String(), "check lock-safety [########################] 6/6")
	require.Contains(t, progress.String(), "run 4/6: lock redsync, mode unfenced, seed 6...")

	// Parallel: every seed once, each handed over one at a time.
	ran = nil
	s = Suite{Base: suiteBase(), Seeds: []int64{1, 2, 3, 4}, Parallel: 3, Run: fake}
	n := 0
	sum, err = RunSuite(context.Background(), s, func(SuiteRun) error { n++; return nil })
	require.NoError(t, err)
	require.Equal(t, 4, n)
	require.Equal(t, 4, sum.Runs)
	seeds := []int64{}
	for _, c := range ran {
		seeds = append(seeds, c.Seed)
		require.Nil(t, c.Progress, "per-fault lines are left out in parallel")
	}
	slices.Sort(seeds)
	require.Equal(t, []int64{1, 2, 3, 4}, seeds)

	// An error stops the suite.
	ran = nil
	s = Suite{Base: suiteBase(), Seeds: []int64{12, 13, 14}, Run: fake}
	sum, err = RunSuite(context.Background(), s, func(SuiteRun) error { return nil })
	require.ErrorIs(t, err, ErrRedisUnreachable)
	require.Equal(t, 1, sum.Runs)
	require.Len(t, ran, 2, "seed 14 did not run")
}

// TestSuiteSeeds runs two seeds of the unfenced check for real, freezing
// the holder past its TTL every few seconds (replaces internal/cli's
// TestCheckSeeds): the runs come back in seed order with the summary
// counting them, and a run that lost an update has its schedule recorded
// and a replay command that reads it.
//
// Each run ends when a frozen holder's late write overwrote a later
// holder's (an update is then lost), not at a fixed time: on a starved
// machine a 10-second run could end before any holder wrote (holders
// acquired in 1-4s and lost their 1s lease before their first read).
// runBound bounds a run that never gets there.
func TestSuiteSeeds(t *testing.T) {
	t.Parallel() // clusters of its own
	if testing.Short() {
		t.Skip("two runs on three-member clusters")
	}
	const runBound = 2 * time.Minute
	takeClusters(t, 2) // its two runs go at once
	ctx, cancel := context.WithTimeout(context.Background(), runBound+time.Minute)
	defer cancel()
	b := suiteBase()
	// A 2s lease: a holder whose keepalive is answered late on a loaded
	// machine still reaches its writes. A freeze lasts 3.5s and then until
	// a later holder is granted: the successor has the time to write.
	b.Fencing, b.Duration, b.DataDir, b.TTL = false, runBound, t.TempDir(), 2*time.Second
	for at := 1500 * time.Millisecond; at < runBound; at += 5 * time.Second {
		b.Schedule = append(b.Schedule, Step{Kind: FaultFreezeClient, Client: 1, Hold: 3500 * time.Millisecond, Quiet: 500 * time.Millisecond, At: at})
	}
	untilLost := func(ctx context.Context, c Config) (Report, History, error) {
		ctx, stop := context.WithCancel(ctx)
		defer stop()
		c.onLateWrite = func(overwrote bool) {
			if overwrote {
				stop()
			}
		}
		return Run(ctx, c)
	}
	var got []SuiteRun
	s := Suite{Base: b, Seeds: []int64{3, 4}, Parallel: 2, Record: "", Run: untilLost}
	sum, err := RunSuite(ctx, s, func(r SuiteRun) error { got = append(got, r); return nil })
	require.NoError(t, err)
	require.Len(t, got, 2)
	slices.SortFunc(got, func(a, b SuiteRun) int { return a.N - b.N })
	require.Equal(t, []int64{3, 4}, []int64{got[0].Verdict.Seed, got[1].Verdict.Seed})
	require.Equal(t, 2, sum.Runs)
	require.Equal(t, got[0].Verdict.FaultTotal()+got[1].Verdict.FaultTotal(), sum.Faults)
	for _, r := range got {
		v := r.Verdict
		t.Logf("seed %d: %.1fs, %d writes, %d lost updates; replay: %s", v.Seed, v.DurationS, v.Writes, v.LostUpdates, v.Replay)
		require.True(t, v.Passed, "the unfenced baseline passes when it completes")
		require.Equal(t, filepath.Join(b.DataDir, map[int64]string{3: "1", 4: "2"}[v.Seed]), r.Config.DataDir)
		require.True(t, v.Failed(), "seed %d: no frozen holder's late write overwrote a later holder's in %s: %+v", v.Seed, runBound, v.Effects)
		t.Cleanup(func() { os.Remove(v.Recorded) })
		require.Contains(t, v.Replay, "--no-fencing --process-clients=false --schedule "+v.Recorded)
		sf, err := LoadSchedule(v.Recorded, TargetLock, 3)
		require.NoError(t, err)
		require.Equal(t, v.Seed, sf.Seed)
		require.Equal(t, v.Schedule, sf.Steps)
	}
}
