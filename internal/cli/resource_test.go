package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
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
			require.Equal(t, exitUsage, res.Code, "stdout %q stderr %q", res.Stdout, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
			require.Contains(t, res.Stderr, "Usage:")
			require.Empty(t, res.Stdout)
		})
	}
}

func TestResourceCmdClientsInProcess(t *testing.T) {
	url := startTestResource(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := func(args ...string) cliResult {
		return runInProcess(ctx, nil, append(args, "--url", url)...)
	}

	res := run("resource", "put", "config", "v1", "--token", "42", "--scope", "jobs")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	require.Equal(t, "ok key=config seq=1 version=1 token=42 scope=jobs\n", res.Stdout)

	res = run("-w", "json", "resource", "put", "config", "v2", "--token", "42", "--scope", "jobs", "--if-match", "1",
		"--idempotency-key", "r1")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	var put fencing.PutResult
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &put))
	require.Equal(t, fencing.PutResult{Key: "config", Token: 42, Scope: "jobs", Seq: 2, Version: 2}, put)

	// The retry with the same idempotency key is answered the same, applied once.
	res2 := run("-w", "json", "resource", "put", "config", "v2", "--token", "42", "--scope", "jobs", "--if-match", "1",
		"--idempotency-key", "r1")
	require.Equal(t, exitOK, res2.Code, res2.Stderr)
	require.Equal(t, res.Stdout, res2.Stdout)

	res = run("resource", "put", "config", "v3", "--token", "42", "--scope", "jobs", "--if-match", "1")
	require.Equal(t, exitError, res.Code)
	require.Contains(t, res.Stderr, "version mismatch")

	res = run("resource", "fence", "--token", "57", "--scope", "jobs")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	require.Equal(t, "ok scope=jobs floor=57\n", res.Stdout)

	res = run("resource", "put", "config", "late", "--token", "42", "--scope", "jobs")
	require.Equal(t, exitStale, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "stale token 42")
	require.Contains(t, res.Stderr, "floor is 57")
	require.Empty(t, res.Stdout)

	res = run("resource", "fence", "--token", "50", "--scope", "jobs")
	require.Equal(t, exitStale, res.Code, res.Stderr)

	res = run("resource", "get", "config")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	require.Equal(t, "v2", res.Stdout)

	res = run("-w", "json", "resource", "get", "config")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	var e fencing.Entry
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &e))
	require.Equal(t, fencing.Entry{Key: "config", Value: "v2", Token: 42, Scope: "jobs", Version: 2}, e)

	res = run("resource", "get", "missing")
	require.Equal(t, exitError, res.Code)
	require.Contains(t, res.Stderr, "key not found")

	res = run("resource", "log", "--scope", "jobs")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	require.Equal(t, `seq=1 scope=jobs token=42 key=config version=1 value="v1"
seq=2 scope=jobs token=42 key=config version=2 value="v2"
writes=2 rejected=2
`, res.Stdout)

	res = run("-w", "json", "resource", "log")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	require.Equal(t, 1, strings.Count(res.Stdout, "\n"), "one JSON object on one line")
	var l fencing.LogResult
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &l))
	require.Len(t, l.Writes, 2)
	require.Equal(t, 2, l.Rejected)
	require.Equal(t, fencing.Token(57), l.Floors["jobs"])
}

func TestResourceCmdValueFromStdin(t *testing.T) {
	url := startTestResource(t)
	var out, errOut strings.Builder
	code := run(context.Background(), []string{"resource", "put", "k", "-", "--token", "1", "--scope", "s", "--url", url},
		ioStreams{In: strings.NewReader("from stdin"), Out: &out, ErrOut: &errOut}, func(string) string { return "" })
	require.Equal(t, exitOK, code, errOut.String())
	res := runInProcess(context.Background(), nil, "resource", "get", "k", "--url", url)
	require.Equal(t, "from stdin", res.Stdout)
}

func TestResourceCmdUnreachableURL(t *testing.T) {
	dead := "http://" + freeAddr(t)
	res := runInProcess(context.Background(), nil, "resource", "get", "k", "--url", dead)
	require.Equal(t, exitError, res.Code)
	require.Contains(t, res.Stderr, strings.TrimPrefix(dead, "http://"))
}

// syncBuffer is a strings.Builder safe to read while a process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// resourceProcess is 'coordctl resource serve' running as a real process.
type resourceProcess struct {
	cmd  *exec.Cmd
	url  string
	done chan error
}

func startResourceProcess(t *testing.T, bin, dataDir string) *resourceProcess {
	t.Helper()
	cmd := exec.Command(bin, "-w", "json", "resource", "serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	p := &resourceProcess{cmd: cmd, done: make(chan error, 1)}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
		p.done <- cmd.Wait()
	}()
	select {
	case line, ok := <-lines:
		require.True(t, ok, "resource serve printed nothing; stderr: %s", stderr.String())
		var ready struct {
			URL string `json:"url"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &ready), line)
		require.True(t, strings.HasPrefix(ready.URL, "http://127.0.0.1:"), ready.URL)
		require.NotEqual(t, "http://127.0.0.1:0", ready.URL, "the URL must show the real port")
		p.url = ready.URL
	case <-time.After(60 * time.Second):
		t.Fatalf("resource serve not ready within 60s; stderr: %s", stderr.String())
	}
	return p
}

func (p *resourceProcess) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sigterm))
	select {
	case err := <-p.done:
		require.NoError(t, err, "resource serve must exit 0 on SIGTERM")
		p.done <- err // for the cleanup
	case <-time.After(20 * time.Second):
		t.Fatal("resource serve did not stop within 20s of SIGTERM")
	}
}

func TestResourceCmdEndToEnd(t *testing.T) {
	bin := coordctlBinary(t)
	dataDir := t.TempDir()
	srv := startResourceProcess(t, bin, dataDir)

	coordctl := func(args ...string) (int, string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("run coordctl %v: %v", args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
	}

	code, out, errOut := coordctl("resource", "put", "report", "by-holder-1", "--url", srv.url, "--token", "10", "--scope", "jobs/nightly")
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, out, "ok key=report seq=1")

	// The next holder (token 11) fences; the paused first holder wakes up and writes.
	code, _, errOut = coordctl("resource", "fence", "--url", srv.url, "--token", "11", "--scope", "jobs/nightly")
	require.Equal(t, exitOK, code, errOut)
	code, out, errOut = coordctl("resource", "put", "report", "late-write", "--url", srv.url, "--token", "10", "--scope", "jobs/nightly")
	require.Equal(t, exitStale, code, "stdout %q stderr %q", out, errOut)
	require.Contains(t, errOut, "stale token 10")

	code, out, _ = coordctl("resource", "get", "report", "--url", srv.url)
	require.Equal(t, exitOK, code)
	require.Equal(t, "by-holder-1", out)

	code, _, errOut = coordctl("resource", "get", "nothing", "--url", srv.url)
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "not found")

	for _, bad := range []string{"abc", "0", "-3"} {
		code, _, errOut = coordctl("resource", "put", "report", "x", "--url", srv.url, "--token", bad, "--scope", "jobs/nightly")
		require.Equal(t, exitUsage, code, "token %q: %s", bad, errOut)
	}

	// Restart on the same data directory: the floor survived, the stale holder is still rejected.
	srv.stop(t)
	srv = startResourceProcess(t, bin, dataDir)
	code, _, errOut = coordctl("resource", "put", "report", "late-write", "--url", srv.url, "--token", "10", "--scope", "jobs/nightly")
	require.Equal(t, exitStale, code, errOut)
	require.Contains(t, errOut, "floor is 11")

	code, out, errOut = coordctl("resource", "put", "report", "by-holder-2", "--url", srv.url, "--token", "11", "--scope", "jobs/nightly")
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, out, "seq=2")

	code, out, errOut = coordctl("-w", "json", "resource", "log", "--url", srv.url, "--scope", "jobs/nightly")
	require.Equal(t, exitOK, code, errOut)
	var l fencing.LogResult
	require.NoError(t, json.Unmarshal([]byte(out), &l))
	require.Len(t, l.Writes, 2)
	require.Equal(t, []fencing.Token{10, 11}, []fencing.Token{l.Writes[0].Token, l.Writes[1].Token})
	require.Equal(t, 2, l.Rejected, "one rejection before the restart, one after")
	srv.stop(t)
}

// A child of `coordctl lock` or `coordctl sidecar` can write with the token
// and scope it finds in its environment, without repeating them.
func TestResourceCmdTokenAndScopeFromEnvironment(t *testing.T) {
	url := startTestResource(t)
	ctx := context.Background()
	env := map[string]string{"COORD_FENCING_TOKEN": "12", "COORD_LOCK_NAME": "jobs/env"}
	res := runInProcess(ctx, env, "resource", "put", "k", "v", "--url", url, "-w", "json")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, `"token":12`)
	require.Contains(t, res.Stdout, `"scope":"jobs/env"`)

	env = map[string]string{"COORD_FENCING_TOKEN": "11", "COORD_ELECTION": "jobs/env"}
	res = runInProcess(ctx, env, "resource", "put", "k", "v", "--url", url)
	require.Equal(t, exitStale, res.Code, "token 11 is below the floor 12 that the first write set")

	res = runInProcess(ctx, env, "resource", "put", "k", "v", "--url", url, "--token", "13")
	require.Equal(t, exitOK, res.Code, "a flag overrides the environment: %s", res.Stderr)
}
