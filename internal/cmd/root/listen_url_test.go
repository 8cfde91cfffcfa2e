package root

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// A wildcard --listen (":0", as ":4040" in a pod) names no host: the agent
// and the sidecar print the URL a client on the machine dials,
// http://127.0.0.1:PORT, not http://[::]:PORT. (etcd is unreachable here:
// both serve before they reach it, and --start-timeout ends them.)
func TestWildcardListenPrintsALoopbackURL(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret-token-for-the-test\n"), 0o600))

	res := runInProcess(ctx, nil, "--endpoints", "127.0.0.1:1", "--dial-timeout", "300ms",
		"sidecar", "--election", "e", "--id", "a", "--listen", ":0", "--api-token-file", tokenFile, "--start-timeout", "600ms")
	require.Equal(t, cmdutil.ExitError, res.Code, res.Stderr)
	require.Regexp(t, `(?m)^ready url=http://127\.0\.0\.1:\d+$`, res.Stdout)

	res = runInProcess(ctx, nil, "--endpoints", "127.0.0.1:1", "--dial-timeout", "300ms",
		"agent", "--listen", ":0", "--api-token-file", tokenFile, "--start-timeout", "600ms")
	require.Equal(t, cmdutil.ExitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "coordctl agent: serving http://127.0.0.1:")
	require.NotContains(t, res.Stderr, "http://[::]")
}
