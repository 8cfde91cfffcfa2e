package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/testio"
)

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
	stderr := &testio.SyncBuffer{}
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
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-p.done:
		require.NoError(t, err, "resource serve must exit 0 on SIGTERM")
		p.done <- err // for the cleanup
	case <-time.After(20 * time.Second):
		t.Fatal("resource serve did not stop within 20s of SIGTERM")
	}
}

func TestResourceCmdEndToEnd(t *testing.T) {
	t.Parallel()
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

// A connection that has sent no request yet (Go's client dials a spare
// one when two requests race, browsers open them ahead of need) does not
// hold up 'resource serve' on SIGTERM: net/http's Shutdown counts such a
// connection as busy for its first five seconds (golang/go#22682), and
// the command took about 6s to exit.
func TestResourceServeStopsPromptlyWithAnIdleConnection(t *testing.T) {
	t.Parallel()
	srv := startResourceProcess(t, coordctlBinary(t), t.TempDir())
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.url, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	// The server has accepted it once a request on another connection is
	// answered (one accept loop, in order).
	resp, err := http.Get(srv.url + "/v1/floors")
	require.NoError(t, err)
	resp.Body.Close()
	start := time.Now()
	srv.stop(t)
	require.Less(t, time.Since(start), 3*time.Second, "resource serve waited for a connection that sent nothing")
}
