package cli

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A taken peer or client port is one line on stderr and exit 1, not etcd's
// JSON log with a stack trace.
func TestEtcdBusyPortIsOneLine(t *testing.T) {
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
				tc.flag, "http://"+busy.Addr().String(), tc.other, "http://"+freeAddr(t))
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

// resource serve on a taken port fails before it creates its data dir.
func TestResourceServeBusyPortCreatesNothing(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	dir := filepath.Join(t.TempDir(), "res")
	res := runInProcess(context.Background(), nil, "resource", "serve", "--listen", busy.Addr().String(), "--data-dir", dir)
	require.Equal(t, exitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "address already in use")
	_, err = os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist, "the data dir must not be created")
}
