package e2e

import (
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/nettest"
)

// A second coordctl etcd on a data directory in use exits 1 at once, saying
// so, instead of waiting for ever on etcd's database lock (issue 11, #1).
func TestEtcdE2EDataDirInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := startCoordctl(t, nil, "etcd", "-w", "json", "--data-dir", dir,
		"--listen-client-urls", "http://"+nettest.ClosedAddr(t), "--listen-peer-urls", "http://"+nettest.ClosedAddr(t))
	var ready struct{ Endpoints []string }
	require.NoError(t, json.Unmarshal([]byte(first.line(t)), &ready), first.stderr.String())

	second := startCoordctl(t, nil, "etcd", "--data-dir", dir,
		"--listen-client-urls", "http://"+nettest.ClosedAddr(t), "--listen-peer-urls", "http://"+nettest.ClosedAddr(t))
	require.Equal(t, exitError, second.wait(t, 60*time.Second))
	require.Contains(t, second.stderr.String(), "data dir "+dir+" is in use by another process")
}

func TestEtcdCommandServesAndStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	bin := coordctlBinary(t)
	client, peer := nettest.ClosedAddr(t), nettest.ClosedAddr(t)
	cmd := exec.Command(bin, "etcd", "-w", "json", "--data-dir", t.TempDir(),
		"--listen-client-urls", "http://"+client, "--listen-peer-urls", "http://"+peer)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var ready struct{ Endpoints []string }
	require.NoError(t, json.NewDecoder(stdout).Decode(&ready))
	require.Equal(t, []string{"http://" + client}, ready.Endpoints)

	// The endpoint it printed serves: a claim through a second coordctl.
	code, out, _ := runBinary(t, []string{"COORDCTL_ENDPOINTS=" + ready.Endpoints[0]}, "claim", "e2e/etcd", "--owner", "a")
	require.Equal(t, exitOK, code, out)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "coordctl etcd must exit 0 on SIGTERM")
	case <-time.After(20 * time.Second):
		t.Fatal("coordctl etcd did not stop within 20s of SIGTERM")
	}
}

// A taken peer or client port is one line on stderr and exit 1, not etcd's
// JSON log with a stack trace.
func TestEtcdBusyPortIsOneLine(t *testing.T) {
	t.Parallel()
	bin := coordctlBinary(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	for _, tc := range []struct{ name, flag, other string }{
		{"peer", "--listen-peer-urls", "--listen-client-urls"},
		{"client", "--listen-client-urls", "--listen-peer-urls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, "etcd", "--data-dir", filepath.Join(t.TempDir(), "d"),
				tc.flag, "http://"+busy.Addr().String(), tc.other, "http://"+nettest.ClosedAddr(t))
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, stderr.String())
			require.Equal(t, exitError, ee.ExitCode(), stderr.String())
			out := strings.TrimSpace(stderr.String())
			require.Equal(t, 1, strings.Count(out, "\n")+1, "want one line, got:\n%s", out)
			require.Contains(t, out, tc.name+" URL http://"+busy.Addr().String())
			require.Contains(t, out, "address already in use")
			require.NotContains(t, out, "{")
			require.Empty(t, stdout.String())
		})
	}
}
