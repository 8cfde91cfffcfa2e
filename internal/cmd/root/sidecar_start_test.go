package root

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

// A sidecar checks at start what it would otherwise find out only when it
// wins: a token file it cannot write, a command it cannot run. Both fail
// before 'ready', against a live etcd where the sidecar would lead.
func TestSidecarChecksFlagsBeforeReady(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"token file in a missing dir", []string{"--token-file", filepath.Join(dir, "nope", "token")}, cmdutil.ExitUsage, "invalid --token-file"},
		{"token file under a file", []string{"--token-file", filepath.Join(file, "token")}, cmdutil.ExitUsage, "invalid --token-file"},
		{"token file is a dir", []string{"--token-file", dir}, cmdutil.ExitUsage, "is a directory"},
		{"command not found", []string{"--", "coordkit-no-such-command"}, cmdutil.ExitCommandNotFound, "coordkit-no-such-command"},
		{"command not executable", []string{"--", file}, cmdutil.ExitCannotExecute, "permission denied"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			args := append([]string{"sidecar", "--endpoints", strings.Join(srv.Endpoints(), ","),
				"--election", "start-" + strings.ReplaceAll(tc.name, " ", "-"), "--id", "a", "--listen", "127.0.0.1:0"}, tc.args...)
			res := runInProcess(ctx, nil, args...)
			require.Equal(t, tc.code, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
			require.NotContains(t, res.Stdout, "ready", "the check must come before ready")
		})
	}
}
