package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/safety"
)

func TestCheckUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"short duration", []string{"check", "lock-safety", "--duration", "1s"}, "--duration"},
		{"one client", []string{"check", "lock-safety", "--clients", "1"}, "--clients"},
		{"small ttl", []string{"check", "election-safety", "--ttl", "100ms"}, "--ttl"},
		{"args", []string{"check", "lock-safety", "x"}, "unknown command"},
		{"rmw without url", []string{"check", "rmw", "--id", "a"}, "--url and --id"},
		{"seeds reversed", []string{"check", "lock-safety", "--seeds", "5..1"}, "--seeds"},
		{"seeds not numbers", []string{"check", "lock-safety", "--seeds", "a..b"}, "--seeds"},
		{"seed and seeds", []string{"check", "lock-safety", "--seeds", "1..2", "--seed", "3"}, "--seed and --seeds"},
		{"kind", []string{"check", "lock-safety", "--kind", "spinlock"}, "--kind"},
		{"limit without semaphore", []string{"check", "lock-safety", "--limit", "2"}, "--limit"},
		{"limit too large", []string{"check", "lock-safety", "--kind", "semaphore", "--limit", "5"}, "--limit"},
		{"lock", []string{"check", "lock-safety", "--lock", "nosuch"}, "--lock"},
		{"redsync without redis", []string{"check", "lock-safety", "--lock", "redsync"}, "--redis"},
		{"redis without redsync", []string{"check", "lock-safety", "--redis", "127.0.0.1:6379"}, "--redis"},
		{"redsync no-fencing", []string{"check", "lock-safety", "--lock", "redsync", "--redis", "x:1", "--no-fencing"}, "--no-fencing"},
		{"resource", []string{"check", "lock-safety", "--resource", "s3"}, "--resource"},
		{"driver", []string{"check", "lock-safety", "--resource", "sql", "--driver", "oracle"}, "--driver"},
		{"dsn missing", []string{"check", "lock-safety", "--resource", "sql", "--driver", "postgres"}, "--dsn"},
		{"dsn without sql", []string{"check", "lock-safety", "--dsn", "x"}, "--resource sql"},
		{"history with seeds", []string{"check", "lock-safety", "--seeds", "1..2", "--history", "h.json"}, "--history"},
		{"kind on election", []string{"check", "election-safety", "--kind", "semaphore"}, "unknown flag"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runInProcess(context.Background(), nil, tc.args...)
			require.Equal(t, exitUsage, res.Code, "stdout %q stderr %q", res.Stdout, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
		})
	}
}

func TestCheckRMW(t *testing.T) {
	t.Parallel()
	url := startTestResource(t)
	ctx := context.Background()
	env := map[string]string{"COORD_FENCING_TOKEN": "5", "COORD_LOCK_NAME": "safety"}
	rmw := func(id string) (cliResult, safety.RMWResult) {
		res := runInProcess(ctx, env, "check", "rmw", "--url", url, "--id", id, "-w", "json")
		var out safety.RMWResult
		require.NoError(t, json.Unmarshal([]byte(res.Stdout), &out), res.Stdout+res.Stderr)
		return res, out
	}
	res, out := rmw("a")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	require.Equal(t, safety.RMWResult{ID: "a.5", Token: 5, Fence: safety.OK, Read: 0, ReadOK: true, Wrote: 1, Write: safety.OK}, out)
	res, out = rmw("b")
	require.Equal(t, exitOK, res.Code)
	require.Equal(t, 2, out.Wrote)

	fc := fencing.Client{BaseURL: url}
	_, err := fc.Fence(ctx, 9, "safety")
	require.NoError(t, err)
	res, out = rmw("c")
	require.Equal(t, exitStale, res.Code, "a fence with a later token makes the holder stale")
	require.Equal(t, safety.Stale, out.Fence)
	e, err := fc.Get(ctx, "counter")
	require.NoError(t, err)
	require.Equal(t, "2 b.5", e.Value)

	res = runInProcess(ctx, map[string]string{"COORD_LOCK_NAME": "safety"}, "check", "rmw", "--url", url, "--id", "d")
	require.Equal(t, exitUsage, res.Code)
	require.Contains(t, res.Stderr, "COORD_FENCING_TOKEN")
}

func TestCheckReportSimple(t *testing.T) {
	t.Parallel()
	r := checkReport{Report: safety.Report{
		Check: "lock-safety", Seed: 7, Fencing: false, DurationS: 20, Ops: 100, Acquisitions: 10, Writes: 30, FinalValue: 25,
		Faults: map[string]int{"freeze-client": 1, "isolate-member": 2}, OverlappingHolders: 1, LostUpdates: 5, Violations: 1,
		Examples: []safety.Violation{{Kind: safety.KindLostUpdate, Detail: "write seq 9 ..."}}, Linearizable: true, Passed: true,
	}, replay: "coordctl check lock-safety --seed 7 --no-fencing"}
	var b strings.Builder
	require.NoError(t, r.WriteSimple(&b))
	for _, want := range []string{"lock-safety: PASSED", "fencing OFF", "seed 7", "freeze-client=1 isolate-member=2",
		"lost updates:        5", "lost-update: write seq 9", "linearizable:        yes", "replay: coordctl check lock-safety --seed 7 --no-fencing"} {
		require.Contains(t, b.String(), want)
	}
	js, err := json.Marshal(r)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(js, &m))
	for _, k := range []string{"check", "seed", "fencing", "duration_s", "ops", "acquisitions", "faults", "stale_rejected",
		"overlapping_holders", "lost_updates", "violations", "linearizable", "passed"} {
		require.Contains(t, m, k)
	}
	o := &checkOptions{Target: safety.TargetLock, Duration: 20 * time.Second, Clients: 5, TTL: 2 * time.Second, NoFencing: true, ProcessClients: true}
	require.Equal(t, "coordctl check lock-safety --duration 20s --clients 5 --ttl 2s --seed 3 --no-fencing", replayCommand(o, 3))
}

func TestParseSeeds(t *testing.T) {
	t.Parallel()
	lo, hi, err := parseSeeds("3..7")
	require.NoError(t, err)
	require.Equal(t, []int64{3, 7}, []int64{lo, hi})
	lo, hi, err = parseSeeds("-2..-2")
	require.NoError(t, err)
	require.Equal(t, []int64{-2, -2}, []int64{lo, hi})
	lo, hi, err = parseSeeds("9")
	require.NoError(t, err)
	require.Equal(t, []int64{9, 9}, []int64{lo, hi})
	for _, bad := range []string{"", "..", "1..", "..2", "2..1", "1...3", "0..1000", "x"} {
		_, _, err := parseSeeds(bad)
		require.Error(t, err, bad)
	}
}

func TestCheckRowSimple(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(checkTableHeader())
	r := checkRow{safety.Report{Seed: 4, Lock: safety.LockRedsync, Kind: safety.KindMutex, Mode: safety.ModeIfMatch, Acquisitions: 12,
		OverlappingHolders: 2, MaxHolders: 1, Faults: map[string]int{"freeze-client": 3}, Passed: true}}
	require.NoError(t, r.WriteSimple(&b))
	require.NoError(t, checkSummary{Runs: 3, Faults: 9, Effective: 4, Violations: 1, Failed: 1}.WriteSimple(&b))
	t.Log("\n" + b.String())
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 3)
	require.Equal(t, []string{"seed", "lock", "kind", "mode", "acquired", "overlapping", "lost", "holders", "faults", "frozen", "violations", "verdict"}, strings.Fields(lines[0]))
	require.Equal(t, []string{"4", "redsync", "mutex", "if-match", "12", "2", "0", "1", "3", "3", "0", "passed"}, strings.Fields(lines[1]))
	require.Contains(t, lines[2], "3 runs, 1 failed, 9 faults (4 effective), 1 violations")
}

// checkLines runs a check in process and decodes its JSON lines: the
// reports, then the summary.
func checkLines(t *testing.T, args ...string) (int, []safety.Report, checkSummary, string) {
	t.Helper()
	res := runInProcess(context.Background(), nil, append([]string{"check", "lock-safety", "--duration", "5s",
		"--process-clients=false", "-w", "json"}, args...)...)
	var reps []safety.Report
	var sum checkSummary
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		if line == "" {
			continue
		}
		if strings.Contains(line, `"summary":true`) {
			require.NoError(t, json.Unmarshal([]byte(line), &sum))
			continue
		}
		var r safety.Report
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		reps = append(reps, r)
	}
	return res.Code, reps, sum, res.Stderr
}

func TestCheckSeeds(t *testing.T) {
	t.Parallel() // its own cluster
	if testing.Short() {
		t.Skip("two runs on a three-member cluster")
	}
	code, reps, sum, stderr := checkLines(t, "--seeds", "3..4")
	require.Equal(t, exitOK, code, stderr)
	require.Len(t, reps, 2)
	require.Equal(t, []int64{3, 4}, []int64{reps[0].Seed, reps[1].Seed})
	require.True(t, sum.Summary)
	require.Equal(t, 2, sum.Runs)
	require.Equal(t, reps[0].FaultTotal()+reps[1].FaultTotal(), sum.Faults)
	require.Zero(t, sum.Violations)
}

func TestCheckKinds(t *testing.T) {
	t.Parallel() // its own cluster
	if testing.Short() {
		t.Skip("runs on a three-member cluster")
	}
	for _, args := range [][]string{{"--kind", "semaphore", "--limit", "2"}, {"--kind", "rwmutex"}} {
		t.Run(args[1], func(t *testing.T) {
			t.Parallel() // each run has its own cluster
			code, reps, _, stderr := checkLines(t, append(args, "--seed", "1")...)
			require.Equal(t, exitOK, code, stderr)
			require.Len(t, reps, 1)
			require.Equal(t, args[1], string(reps[0].Kind))
			require.Zero(t, reps[0].Violations)
			require.Zero(t, reps[0].LostUpdates)
			require.LessOrEqual(t, reps[0].MaxHolders, reps[0].Limit)
		})
	}
}

func TestCheckSQLResourceSQLite(t *testing.T) {
	t.Parallel() // its own cluster
	if testing.Short() {
		t.Skip("a run on a three-member cluster")
	}
	code, reps, _, stderr := checkLines(t, "--resource", "sql", "--driver", "sqlite", "--seed", "1")
	require.Equal(t, exitOK, code, stderr)
	require.Len(t, reps, 1)
	require.Equal(t, safety.ResourceSQL, reps[0].Resource)
	require.Zero(t, reps[0].Violations)
	require.True(t, reps[0].Passed)
	// How many writes a 5s run gets through depends on the load (none at
	// load 30); internal/safety's TestSQLResource asserts they happen.
	t.Logf("%d writes", reps[0].Writes)
}

func TestCheckRedsyncUnreachable(t *testing.T) {
	t.Parallel()
	res := runInProcess(context.Background(), nil, "check", "lock-safety", "--lock", "redsync", "--redis", "127.0.0.1:1",
		"--dial-timeout", "1s", "--duration", "5s")
	require.Equal(t, exitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "redis unreachable at 127.0.0.1:1")
	require.Empty(t, res.Stdout)
}

// TestCheckRedsync runs the comparison against a real Redis
// (COORDKIT_TEST_REDIS_ADDR): three runs of one seed, the If-Match one
// without lost updates and coordkit fenced without violations.
func TestCheckRedsync(t *testing.T) {
	t.Parallel()
	addr := os.Getenv("COORDKIT_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("COORDKIT_TEST_REDIS_ADDR is not set: no Redis to run redsync against")
	}
	if testing.Short() {
		t.Skip("runs on Redis and a three-member cluster")
	}
	code, reps, sum, stderr := checkLines(t, "--lock", "redsync", "--redis", addr, "--seed", "2")
	if code == exitError && strings.Contains(stderr, "unreachable") && os.Getenv("CI") != "true" {
		t.Skipf("COORDKIT_TEST_REDIS_ADDR=%s does not answer: %s", addr, stderr)
	}
	require.Equal(t, exitOK, code, stderr)
	require.Len(t, reps, 3)
	require.Equal(t, 3, sum.Runs)
	require.Equal(t, []safety.Mode{safety.ModeUnfenced, safety.ModeIfMatch, safety.ModeFenced}, []safety.Mode{reps[0].Mode, reps[1].Mode, reps[2].Mode})
	require.Equal(t, []safety.LockImpl{safety.LockRedsync, safety.LockRedsync, safety.LockCoordkit}, []safety.LockImpl{reps[0].Lock, reps[1].Lock, reps[2].Lock})
	for _, r := range reps {
		for _, k := range keys(r.Faults) {
			require.Equal(t, "freeze-client", k, "only the fault that applies to Redis, in each run")
		}
	}
	require.Zero(t, reps[1].LostUpdates)
	require.Zero(t, reps[1].Violations)
	require.Zero(t, reps[2].Violations)
}

func keys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestCheckRedsyncLock: the process clients' wrapper numbers its grants
// from one Redis key, gives the command the number and the scope, and
// passes the command's exit status through.
func TestCheckRedsyncLock(t *testing.T) {
	t.Parallel()
	addr := os.Getenv("COORDKIT_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("COORDKIT_TEST_REDIS_ADDR is not set: no Redis to run redsync against")
	}
	prefix := fmt.Sprintf("coordkit-test-%d/", time.Now().UnixNano())
	rc := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := rc.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			rc.Del(ctx, keys...)
		}
		_ = rc.Close()
	})
	ctx := context.Background()
	if err := rc.Ping(ctx).Err(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("COORDKIT_TEST_REDIS_ADDR=%s: %v", addr, err)
		}
		t.Skipf("COORDKIT_TEST_REDIS_ADDR=%s does not answer: %v", addr, err)
	}
	hold := func(script string) cliResult {
		return runInProcess(ctx, nil, "check", "redsync-lock", "--redis", addr, "--prefix", prefix, "--", "sh", "-c", script)
	}
	res := hold("echo $COORD_FENCING_TOKEN $COORD_LOCK_NAME")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	require.Equal(t, "1 safety\n", res.Stdout)
	res = hold("echo $COORD_FENCING_TOKEN; exit 7")
	require.Equal(t, 7, res.Code, res.Stderr)
	require.Equal(t, "2\n", res.Stdout)
	n, err := rc.Exists(ctx, prefix+safety.Scope).Result()
	require.NoError(t, err)
	require.Zero(t, n, "the lock was released")

	res = runInProcess(ctx, nil, "check", "redsync-lock", "--redis", "127.0.0.1:1", "--prefix", prefix, "--dial-timeout", "1s", "--", "true")
	require.Equal(t, exitError, res.Code)
	require.Contains(t, res.Stderr, "127.0.0.1:1")
}
