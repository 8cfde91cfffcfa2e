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
)

// --http on every interface prints a URL one can open (this machine's
// name, the token in it); a token under 16 bytes is refused.
func TestLabHTTPOpenURLAndShortToken(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "s")
	require.NoError(t, os.WriteFile(script, []byte("exit\n"), 0o644))
	short := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(short, []byte("hunter2\n"), 0o600))
	long := filepath.Join(dir, "long")
	require.NoError(t, os.WriteFile(long, []byte("a-token-of-24-bytes-long\n"), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	res := runInProcess(ctx, nil, "lab", "--nodes", "1", "--http", "127.0.0.1:0", "--http-token", short, "--script", script)
	require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "at least 16")

	res = runInProcess(ctx, nil, "lab", "--nodes", "1", "--http", "0.0.0.0:0", "--http-token", long, "--script", script)
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	host, _ := os.Hostname()
	require.Contains(t, res.Stderr, "ready url=http://"+host+":")
	require.Contains(t, res.Stderr, "/?token=a-token-of-24-bytes-long")
	require.False(t, strings.Contains(res.Stderr, "0.0.0.0"), res.Stderr)
}

// A --data-dir made with another --nodes is refused at start, naming the
// stored size (it used to sit silent for 20 s and blame etcd).
func TestLabDataDirOfAnotherSize(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "s")
	require.NoError(t, os.WriteFile(script, []byte("exit\n"), 0o644))
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := runInProcess(ctx, nil, "lab", "--nodes", "1", "--storage", "disk", "--data-dir", data, "--script", script)
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	res = runInProcess(ctx, nil, "lab", "--nodes", "3", "--storage", "disk", "--data-dir", data, "--script", script)
	require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "holds a 1-node cluster, not 3")
	require.NotContains(t, res.Stderr, "etcd")
}
