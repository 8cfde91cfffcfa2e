package root

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
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
		{"parallel 0", []string{"check", "lock-safety", "--seeds", "1..2", "--parallel", "0"}, "--parallel"},
		{"seeds over 1000", []string{"check", "lock-safety", "--seeds", "0..1000"}, "at most 1000 seeds"},
		{"history with seeds", []string{"check", "lock-safety", "--seeds", "1..2", "--history", "h.json"}, "--history"},
		{"kind on election", []string{"check", "election-safety", "--kind", "semaphore"}, "unknown flag"},
		{"python without python-clients", []string{"check", "lock-safety", "--python", "python3"}, "--python applies to --python-clients"},
		{"python that lacks redis", []string{"check", "lock-safety", "--python-clients", "--python", "false", "--lock", "redsync", "--redis", "x:1"},
			"cannot import redis"},
		{"python clients with pg-advisory", []string{"check", "lock-safety", "--python-clients", "--lock", "pg-advisory", "--dsn", "postgres://x"},
			"--python-clients"},
		{"python clients and sigstop-supervisor", []string{"check", "lock-safety", "--python-clients", "--faults", "sigstop-supervisor"},
			"a Python client is one process"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runInProcess(context.Background(), nil, tc.args...)
			require.Equal(t, cmdutil.ExitUsage, res.Code, "stdout %q stderr %q", res.Stdout, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
		})
	}
}

func TestCheckRMW(t *testing.T) {
	t.Parallel()
	url := startTestResource(t)
	ctx := context.Background()
	env := map[string]string{"COORD_FENCING_TOKEN": "5", "COORD_LOCK_NAME": "safety", "COORD_FENCING_SCOPE": "safety/"}
	rmw := func(id string) (cliResult, safety.RMWResult) {
		res := runInProcess(ctx, env, "check", "rmw", "--url", url, "--id", id, "-w", "json")
		var out safety.RMWResult
		require.NoError(t, json.Unmarshal([]byte(res.Stdout), &out), res.Stdout+res.Stderr)
		return res, out
	}
	res, out := rmw("a")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Equal(t, safety.RMWResult{ID: "a.5", Token: 5, Fence: safety.OK, Read: 0, ReadOK: true, Wrote: 1, Write: safety.OK}, out)
	res, out = rmw("b")
	require.Equal(t, cmdutil.ExitOK, res.Code)
	require.Equal(t, 2, out.Wrote)

	fc := fencing.Client{BaseURL: url}
	_, err := fc.Fence(ctx, 9, "safety/")
	require.NoError(t, err)
	res, out = rmw("c")
	require.Equal(t, cmdutil.ExitStale, res.Code, "a fence with a later token makes the holder stale")
	require.Equal(t, safety.Stale, out.Fence)
	e, err := fc.Get(ctx, "counter")
	require.NoError(t, err)
	require.Equal(t, "2 b.5", e.Value)

	res = runInProcess(ctx, map[string]string{"COORD_LOCK_NAME": "safety"}, "check", "rmw", "--url", url, "--id", "d")
	require.Equal(t, cmdutil.ExitUsage, res.Code)
	require.Contains(t, res.Stderr, "COORD_FENCING_TOKEN")
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
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Equal(t, "1 safety\n", res.Stdout)
	res = hold("echo $COORD_FENCING_TOKEN; exit 7")
	require.Equal(t, 7, res.Code, res.Stderr)
	require.Equal(t, "2\n", res.Stdout)
	n, err := rc.Exists(ctx, prefix+safety.Scope).Result()
	require.NoError(t, err)
	require.Zero(t, n, "the lock was released")

	res = runInProcess(ctx, nil, "check", "redsync-lock", "--redis", "127.0.0.1:1", "--prefix", prefix, "--dial-timeout", "1s", "--", "true")
	require.Equal(t, cmdutil.ExitError, res.Code)
	require.Contains(t, res.Stderr, "127.0.0.1:1")
}
