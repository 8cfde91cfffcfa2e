package root

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/election"
	check "github.com/coordkit/coordkit/internal/cmd/check"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/safety"
	"github.com/coordkit/coordkit/internal/testbin"
)

// The safety checks' command tests check what the command does: its
// flags reach the safety.Suite (and its Config) it runs, and it prints
// what the suite's runs report, with the exit codes. What a run finds is
// internal/safety's to test, so the commands get recording runners
// (cli/cli's runF); the suite still runs on the real engine
// (safety.RunSuite, internal/sweep) with a fake check in place of
// safety.Run.

// checkRecorder records the suites and shrinks the command asks for and
// runs them with fake checks.
type checkRecorder struct {
	mu     sync.Mutex
	suites []safety.Suite
	shrink []safety.ShrinkConfig
	// check stands in for safety.Run; nil: a passing report of the seed.
	check func(context.Context, safety.Config) (safety.Report, safety.History, error)
}

func (r *checkRecorder) runners() check.Runners {
	return check.Runners{
		Suite: func(ctx context.Context, s safety.Suite, each func(safety.SuiteRun) error) (safety.Summary, error) {
			r.mu.Lock()
			r.suites = append(r.suites, s)
			r.mu.Unlock()
			s.Run = r.fake
			return safety.RunSuite(ctx, s, each)
		},
		Shrink: func(ctx context.Context, c safety.ShrinkConfig) (safety.ShrinkReport, error) {
			r.mu.Lock()
			r.shrink = append(r.shrink, c)
			r.mu.Unlock()
			c.Run = r.fake
			return safety.ShrinkCheck(ctx, c)
		},
	}
}

func (r *checkRecorder) fake(ctx context.Context, cfg safety.Config) (safety.Report, safety.History, error) {
	if r.check != nil {
		return r.check(ctx, cfg)
	}
	return passing(cfg), safety.History{}, nil
}

// passing is a passing report of cfg.
func passing(cfg safety.Config) safety.Report {
	return safety.NewReport(cfg, time.Second, map[string]int{"freeze-client": 1}, safety.Result{Linearizable: true, Acquisitions: 3, Writes: 3, FinalValue: 3})
}

// checkRun runs `coordctl check ARGS` with rec's runners and returns the
// exit code, stdout and stderr.
func checkRun(t *testing.T, rec *checkRecorder, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	f.Executable = func() (string, error) { return "/path/to/coordctl", nil }
	root := newRootCmd(f, func(string) string { return "" })
	for _, c := range root.Commands() {
		if c.Name() == "check" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(check.NewCmdRun(f, rec.runners()))
	root.SetArgs(append([]string{"check"}, args...))
	root.SetOut(&errOut)
	root.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := cmdutil.ExitOK
	if err := root.ExecuteContext(ctx); err != nil {
		code = cmdutil.ExitCode(err)
		errOut.WriteString(err.Error())
	}
	return code, out.String(), errOut.String()
}

func TestCheckFlagsReachTheSuite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sched := filepath.Join(dir, "s.json")
	require.NoError(t, os.WriteFile(sched, []byte(`{"check":"lock-safety","seed":42,"steps":[{"kind":"freeze-client","client":2,"hold":"3s","quiet":"1s","at":"2s"}]}`), 0o644))
	defaults := safety.Config{Target: safety.TargetLock, Duration: 60 * time.Second, Clients: 5, TTL: 2 * time.Second, Fencing: true,
		Kind: safety.KindMutex, Limit: 2, Lock: safety.LockCoordkit, Resource: safety.ResourceHTTP, DialTimeout: cmdutil.DefaultDialTimeout,
		Coordctl: "/path/to/coordctl"}
	cases := []struct {
		name  string
		args  []string
		want  func(c *safety.Config)
		seeds []int64
		suite func(t *testing.T, s safety.Suite)
	}{
		{"defaults", []string{"lock-safety", "--seed", "7"}, func(c *safety.Config) {}, []int64{7}, nil},
		{"run flags", []string{"lock-safety", "--seed", "1", "--duration", "9s", "--clients", "3", "--ttl", "1s", "--no-fencing",
			"--no-fence-first", "--process-clients=false", "--data-dir", filepath.Join(dir, "new")},
			func(c *safety.Config) {
				c.Duration, c.Clients, c.TTL, c.Fencing, c.NoFenceFirst, c.Coordctl, c.DataDir = 9*time.Second, 3, time.Second, false, true, "", filepath.Join(dir, "new")
			}, []int64{1}, nil},
		{"semaphore", []string{"lock-safety", "--seed", "1", "--kind", "semaphore", "--limit", "3"},
			func(c *safety.Config) { c.Kind, c.Limit = safety.KindSemaphore, 3 }, []int64{1}, nil},
		{"rwmutex", []string{"lock-safety", "--seed", "1", "--kind", "rwmutex"}, func(c *safety.Config) { c.Kind = safety.KindRWMutex }, []int64{1}, nil},
		{"sql", []string{"lock-safety", "--seed", "1", "--resource", "sql", "--driver", "sqlite"},
			func(c *safety.Config) { c.Resource, c.SQLDriver = safety.ResourceSQL, "sqlite" }, []int64{1}, nil},
		{"redsync", []string{"lock-safety", "--seed", "2", "--lock", "redsync", "--redis", "127.0.0.1:6379", "--dial-timeout", "1s"},
			func(c *safety.Config) {
				c.Lock, c.RedisAddr, c.DialTimeout = safety.LockRedsync, "127.0.0.1:6379", time.Second
			}, []int64{2},
			func(t *testing.T, s safety.Suite) { require.Equal(t, 3, s.Runs(), "redsync's three runs of one seed") }},
		{"pg-advisory", []string{"lock-safety", "--seed", "2", "--lock", "pg-advisory", "--dsn", "postgres://x"},
			func(c *safety.Config) { c.Lock, c.SQLDSN = safety.LockPGAdvisory, "postgres://x" }, []int64{2},
			func(t *testing.T, s safety.Suite) { require.Equal(t, 3, s.Runs()) }},
		{"election policy", []string{"election-safety", "--seed", "3", "--policy", "priority"},
			func(c *safety.Config) {
				c.Target, c.Kind, c.Limit, c.Lock, c.Policy = safety.TargetElection, "", 0, "", election.Policy("priority")
			}, []int64{3}, nil},
		{"seeds", []string{"lock-safety", "--seeds", "3..5", "--parallel", "2"}, func(c *safety.Config) {}, []int64{3, 4, 5},
			func(t *testing.T, s safety.Suite) { require.Equal(t, 2, s.Parallel) }},
		{"seed list", []string{"lock-safety", "--seeds", "9,2"}, func(c *safety.Config) {}, []int64{9, 2},
			func(t *testing.T, s safety.Suite) { require.Equal(t, 1, s.Parallel, "one at a time by default") }},
		{"schedule", []string{"lock-safety", "--schedule", sched, "--record", filepath.Join(dir, "rec.json"), "--history", filepath.Join(dir, "h.json")},
			func(c *safety.Config) {
				c.Schedule = []safety.Step{{Kind: safety.FaultFreezeClient, Client: 2, Hold: 3 * time.Second, Quiet: time.Second, At: 2 * time.Second}}
			}, []int64{42}, func(t *testing.T, s safety.Suite) {
				require.Equal(t, filepath.Join(dir, "rec.json"), s.Record)
				require.Equal(t, filepath.Join(dir, "h.json"), s.History)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &checkRecorder{}
			code, out, stderr := checkRun(t, rec, append(tc.args, "-w", "json")...)
			require.Equal(t, cmdutil.ExitOK, code, stderr)
			require.Len(t, rec.suites, 1)
			s := rec.suites[0]
			want := defaults
			tc.want(&want)
			got := s.Base
			require.NotNil(t, got.Progress, "per-fault progress goes to stderr")
			got.Progress = nil
			require.Equal(t, want, got)
			require.Equal(t, tc.seeds, s.Seeds)
			require.NotNil(t, s.Progress)
			if tc.suite != nil {
				tc.suite(t, s)
			}
			require.Equal(t, s.Runs()+map[bool]int{true: 1, false: 0}[s.Runs() > 1], strings.Count(out, "\n"), "a line per run, and a summary for several: %s", out)
		})
	}
}

// TestCheckSeedsOnTheEngine: --seeds runs on the sweep engine (its
// progress line on stderr, rows in seed order), a seed whose unfenced run
// lost an update gets its schedule recorded and its replay command
// printed, and the summary counts every run.
func TestCheckSeedsOnTheEngine(t *testing.T) {
	t.Parallel()
	rec := &checkRecorder{check: func(_ context.Context, cfg safety.Config) (safety.Report, safety.History, error) {
		rep := passing(cfg)
		if cfg.Seed == 4 {
			rep.LostUpdates, rep.Violations = 2, 2 // the unfenced baseline's finding
			rep.Schedule = []safety.Step{{Kind: safety.FaultFreezeClient, Client: 1, Hold: 3 * time.Second, At: time.Second}}
		}
		return rep, safety.History{}, nil
	}}
	code, out, stderr := checkRun(t, rec, "lock-safety", "--no-fencing", "--seeds", "3..5", "--duration", "5s")
	require.Equal(t, cmdutil.ExitOK, code, "the unfenced baseline passes when it completes: %s", stderr)
	require.Contains(t, stderr, "check lock-safety [########################] 3/3", "the sweep engine's progress line")
	require.Contains(t, stderr, "run 2/3: lock coordkit, mode unfenced, seed 4...")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 7, out)
	require.Equal(t, strings.Fields(safety.TableHeader()), strings.Fields(lines[0]))
	for i, seed := range []string{"3", "4", "5"} {
		require.Equal(t, seed, strings.Fields(lines[1+i+map[bool]int{true: 1, false: 0}[i > 1]])[0], "rows in seed order: %s", out)
	}
	replay := strings.TrimPrefix(lines[3], "  replay seed 4: ")
	require.NotEqual(t, lines[3], replay, "the failed seed's replay line follows its row: %s", out)
	require.True(t, strings.HasPrefix(replay, "coordctl check lock-safety --duration 5s --clients 5 --ttl 2s --seed 4 --no-fencing --schedule "), replay)
	path := replay[strings.LastIndex(replay, " ")+1:]
	t.Cleanup(func() { os.Remove(path) })
	sf, err := safety.LoadSchedule(path, safety.TargetLock, 5)
	require.NoError(t, err)
	require.Equal(t, int64(4), sf.Seed)
	require.Len(t, sf.Steps, 1)
	require.Equal(t, "summary: 3 runs, 0 failed, 3 faults (0 effective), 2 violations (2 lost updates, 0 overlapping holders in all)", lines[5])
	require.Equal(t, "replay one: coordctl check lock-safety --duration 5s --clients 5 --ttl 2s --seed 3 --no-fencing", lines[6])

	// JSON: one report per seed, then the summary.
	code, out, _ = checkRun(t, rec, "lock-safety", "--seeds", "1..2", "-w", "json", "--process-clients=false")
	require.Equal(t, cmdutil.ExitOK, code)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3)
	var r safety.Report
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &r))
	require.Equal(t, int64(2), r.Seed)
	var sum safety.Summary
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &sum))
	require.Equal(t, safety.Summary{Summary: true, Runs: 2, Faults: 2}, sum)
}

func TestCheckFailedAndErrors(t *testing.T) {
	t.Parallel()
	failing := &checkRecorder{check: func(_ context.Context, cfg safety.Config) (safety.Report, safety.History, error) {
		rep := passing(cfg)
		rep.Passed, rep.Violations = false, 1
		return rep, safety.History{}, nil
	}}
	code, out, _ := checkRun(t, failing, "lock-safety", "--seed", "6", "--process-clients=false")
	require.Equal(t, cmdutil.ExitError, code, "a violation fails the check")
	require.Contains(t, out, "lock-safety: FAILED")
	require.Contains(t, out, "replay: coordctl check lock-safety --duration 1m0s --clients 5 --ttl 2s --seed 6 --process-clients=false --schedule ")

	for _, err := range []error{safety.ErrRedisUnreachable, safety.ErrDatabaseUnreachable} {
		rec := &checkRecorder{check: func(context.Context, safety.Config) (safety.Report, safety.History, error) {
			return safety.Report{}, safety.History{}, errors.New("at 127.0.0.1:1: " + err.Error())
		}}
		code, out, stderr := checkRun(t, rec, "lock-safety", "--seed", "1")
		require.Equal(t, cmdutil.ExitError, code)
		require.Contains(t, stderr, "127.0.0.1:1")
		require.Empty(t, out)
		rec.check = func(context.Context, safety.Config) (safety.Report, safety.History, error) {
			return safety.Report{}, safety.History{}, err
		}
		code, _, stderr = checkRun(t, rec, "lock-safety", "--seeds", "1..3")
		require.Equal(t, cmdutil.ExitError, code)
		require.Contains(t, stderr, err.Error())
	}
}

func TestCheckShrinkFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := &checkRecorder{check: func(_ context.Context, cfg safety.Config) (safety.Report, safety.History, error) {
		rep := passing(cfg)
		if cfg.Schedule == nil || len(cfg.Schedule) > 0 { // fails with its faults, passes without
			rep.LostUpdates = 1
			rep.Schedule = []safety.Step{{Kind: safety.FaultFreezeClient, Client: 1, Hold: 3 * time.Second, At: time.Second}}
		}
		return rep, safety.History{}, nil
	}}
	code, out, stderr := checkRun(t, rec, "lock-safety", "--no-fencing", "--shrink", "--seed", "8", "--shrink-runs", "2",
		"--record", filepath.Join(dir, "min.json"), "--process-clients=false", "-w", "json")
	require.Equal(t, cmdutil.ExitOK, code, stderr)
	require.Len(t, rec.shrink, 1)
	c := rec.shrink[0]
	require.Equal(t, int64(8), c.Base.Seed)
	require.False(t, c.Base.Fencing)
	require.Equal(t, 2, c.Runs)
	require.Equal(t, filepath.Join(dir, "min.json"), c.Record)
	var rep safety.ShrinkReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Minimal, 1)
	require.Contains(t, rep.Replay, "--seed 8 --no-fencing --process-clients=false --schedule "+filepath.Join(dir, "min.json"))

	passes := &checkRecorder{}
	code, _, stderr = checkRun(t, passes, "lock-safety", "--no-fencing", "--shrink", "--seed", "8")
	require.Equal(t, cmdutil.ExitError, code)
	require.Contains(t, stderr, "nothing to shrink")
}

// --python-clients with --lock redsync: the Python clients take redis-py's
// Lock in redsync's two runs and hold through the coordination API in
// coordkit's, all three under the clients' faults with kill-client; the
// python3 named reaches every run and the replay command.
func TestCheckPythonClientsWithRedsync(t *testing.T) {
	t.Parallel()
	py := testbin.Python(t, "redis", "python3-redis")
	rec := &checkRecorder{}
	code, _, stderr := checkRun(t, rec, "lock-safety", "--seed", "2", "--lock", "redsync", "--redis", "127.0.0.1:6379",
		"--python-clients", "--python", py, "-w", "json")
	require.Equal(t, cmdutil.ExitOK, code, stderr)
	require.Len(t, rec.suites, 1)
	s := rec.suites[0]
	arms := s.Arms(2)
	require.Len(t, arms, 3)
	require.Equal(t, []safety.LockImpl{safety.LockRedsync, safety.LockRedsync, safety.LockCoordkit}, []safety.LockImpl{arms[0].Lock, arms[1].Lock, arms[2].Lock})
	for _, a := range arms {
		require.Equal(t, py, a.Python)
		require.Equal(t, []safety.FaultKind{safety.FaultFreezeClient, safety.FaultSigstop, safety.FaultKillClient}, a.Kinds)
	}
	require.Contains(t, safety.ReplayCommand(s.Base, 2), "--lock redsync --redis 127.0.0.1:6379 --python-clients --python "+py)
}
