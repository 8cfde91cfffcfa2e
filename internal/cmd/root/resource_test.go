package root

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/nettest"
)

// startTestResource serves a fencing.Resource in-process for the client commands.
func startTestResource(t *testing.T) string {
	t.Helper()
	res, err := fencing.NewResource(fencing.ResourceConfig{DataDir: t.TempDir()})
	require.NoError(t, err)
	srv := httptest.NewServer(res)
	t.Cleanup(func() {
		srv.Close()
		res.Close()
	})
	return srv.URL
}

func TestResourceCmdUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"token abc", []string{"resource", "put", "k", "v", "--token", "abc", "--scope", "s"}, "invalid --token"},
		{"token zero", []string{"resource", "put", "k", "v", "--token", "0", "--scope", "s"}, "positive"},
		{"token negative", []string{"resource", "put", "k", "v", "--token", "-3", "--scope", "s"}, "positive"},
		{"token with plus", []string{"resource", "fence", "--token", "+3", "--scope", "s"}, "sign"},
		{"token overflow", []string{"resource", "fence", "--token", "99999999999999999999", "--scope", "s"}, "out of range"},
		{"token missing", []string{"resource", "put", "k", "v", "--scope", "s"}, "--token is required"},
		{"scope missing", []string{"resource", "fence", "--token", "3"}, "--scope is required"},
		{"bad if-match", []string{"resource", "put", "k", "v", "--token", "3", "--scope", "s", "--if-match", "x"}, "--if-match"},
		{"bad url", []string{"resource", "get", "k", "--url", "127.0.0.1:7070"}, "invalid --url"},
		{"put needs two args", []string{"resource", "put", "k", "--token", "3", "--scope", "s"}, "accepts 2 arg"},
		{"get needs a key", []string{"resource", "get"}, "accepts 1 arg"},
		{"fence takes no args", []string{"resource", "fence", "x", "--token", "3", "--scope", "s"}, "unknown command"},
		{"bad listen", []string{"resource", "serve", "--listen", "nonsense", "--data-dir", "/nonexistent/x"}, "invalid --listen"},
		{"empty data dir", []string{"resource", "serve", "--data-dir", ""}, "--data-dir"},
		{"unknown flag", []string{"resource", "log", "--bogus"}, "unknown flag"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runInProcess(context.Background(), nil, tc.args...)
			require.Equal(t, cmdutil.ExitUsage, res.Code, "stdout %q stderr %q", res.Stdout, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
			require.Contains(t, res.Stderr, "Usage:")
			require.Empty(t, res.Stdout)
		})
	}
}

func TestResourceCmdClientsInProcess(t *testing.T) {
	t.Parallel()
	url := startTestResource(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := func(args ...string) cliResult {
		return runInProcess(ctx, nil, append(args, "--url", url)...)
	}

	res := run("resource", "put", "config", "v1", "--token", "42", "--scope", "jobs")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Equal(t, "ok key=config seq=1 version=1 token=42 scope=jobs\n", res.Stdout)

	res = run("-w", "json", "resource", "put", "config", "v2", "--token", "42", "--scope", "jobs", "--if-match", "1",
		"--idempotency-key", "r1")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	var put fencing.PutResult
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &put))
	require.Equal(t, fencing.PutResult{Key: "config", Token: 42, Scope: "jobs", Seq: 2, Version: 2}, put)

	// The retry with the same idempotency key is answered the same, applied once.
	res2 := run("-w", "json", "resource", "put", "config", "v2", "--token", "42", "--scope", "jobs", "--if-match", "1",
		"--idempotency-key", "r1")
	require.Equal(t, cmdutil.ExitOK, res2.Code, res2.Stderr)
	require.Equal(t, res.Stdout, res2.Stdout)

	res = run("resource", "put", "config", "v3", "--token", "42", "--scope", "jobs", "--if-match", "1")
	require.Equal(t, cmdutil.ExitError, res.Code)
	require.Contains(t, res.Stderr, "version mismatch")

	res = run("resource", "fence", "--token", "57", "--scope", "jobs")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Equal(t, "ok scope=jobs floor=57\n", res.Stdout)

	res = run("resource", "put", "config", "late", "--token", "42", "--scope", "jobs")
	require.Equal(t, cmdutil.ExitStale, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "stale token 42")
	require.Contains(t, res.Stderr, "floor is 57")
	require.Empty(t, res.Stdout)

	res = run("resource", "fence", "--token", "50", "--scope", "jobs")
	require.Equal(t, cmdutil.ExitStale, res.Code, res.Stderr)

	res = run("resource", "get", "config")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Equal(t, "v2", res.Stdout)

	res = run("-w", "json", "resource", "get", "config")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	var e fencing.Entry
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &e))
	require.Equal(t, fencing.Entry{Key: "config", Value: "v2", Token: 42, Scope: "jobs", Version: 2}, e)

	res = run("resource", "get", "missing")
	require.Equal(t, cmdutil.ExitError, res.Code)
	require.Contains(t, res.Stderr, "key not found")

	res = run("resource", "log", "--scope", "jobs")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Equal(t, `seq=1 scope=jobs token=42 key=config version=1 value="v1"
seq=2 scope=jobs token=42 key=config version=2 value="v2"
writes=2 rejected=2
`, res.Stdout)

	res = run("-w", "json", "resource", "log")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Equal(t, 1, strings.Count(res.Stdout, "\n"), "one JSON object on one line")
	var l fencing.LogResult
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &l))
	require.Len(t, l.Writes, 2)
	require.Equal(t, 2, l.Rejected)
	require.Equal(t, fencing.Token(57), l.Floors["jobs"])
}

func TestResourceCmdValueFromStdin(t *testing.T) {
	t.Parallel()
	url := startTestResource(t)
	var out, errOut strings.Builder
	code := run(context.Background(), []string{"resource", "put", "k", "-", "--token", "1", "--scope", "s", "--url", url},
		cmdutil.IOStreams{In: strings.NewReader("from stdin"), Out: &out, ErrOut: &errOut}, func(string) string { return "" })
	require.Equal(t, cmdutil.ExitOK, code, errOut.String())
	res := runInProcess(context.Background(), nil, "resource", "get", "k", "--url", url)
	require.Equal(t, "from stdin", res.Stdout)
}

func TestResourceCmdUnreachableURL(t *testing.T) {
	t.Parallel()
	dead := "http://" + nettest.ClosedAddr(t)
	res := runInProcess(context.Background(), nil, "resource", "get", "k", "--url", dead)
	require.Equal(t, cmdutil.ExitError, res.Code)
	require.Contains(t, res.Stderr, strings.TrimPrefix(dead, "http://"))
}

// A child of `coordctl lock` or `coordctl sidecar` can write with the token
// and scope it finds in its environment, without repeating them.
func TestResourceCmdTokenAndScopeFromEnvironment(t *testing.T) {
	t.Parallel()
	url := startTestResource(t)
	ctx := context.Background()
	env := map[string]string{"COORD_FENCING_TOKEN": "12", "COORD_LOCK_NAME": "jobs/env", "COORD_FENCING_SCOPE": "jobs/env/"}
	res := runInProcess(ctx, env, "resource", "put", "k", "v", "--url", url, "-w", "json")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, `"token":12`)
	require.Contains(t, res.Stdout, `"scope":"jobs/env/"`)

	// The name is no scope: without COORD_FENCING_SCOPE nothing is written.
	res = runInProcess(ctx, map[string]string{"COORD_FENCING_TOKEN": "13", "COORD_LOCK_NAME": "jobs/env"}, "resource", "put", "k", "v", "--url", url)
	require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)

	env = map[string]string{"COORD_FENCING_TOKEN": "11", "COORD_ELECTION": "jobs/env", "COORD_FENCING_SCOPE": "jobs/env/"}
	res = runInProcess(ctx, env, "resource", "put", "k", "v", "--url", url)
	require.Equal(t, cmdutil.ExitStale, res.Code, "token 11 is below the floor 12 that the first write set")

	res = runInProcess(ctx, env, "resource", "put", "k", "v", "--url", url, "--token", "13")
	require.Equal(t, cmdutil.ExitOK, res.Code, "a flag overrides the environment: %s", res.Stderr)
}
