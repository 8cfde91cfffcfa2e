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

// A sidecar on a non-loopback address without a token would let anyone on
// the network make it resign: refused before anything starts (exit 2).
func TestSidecarNonLoopbackListenNeedsAPIToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, listen := range []string{":0", "0.0.0.0:0"} {
		res := runInProcess(ctx, nil, "--endpoints", "127.0.0.1:1", "sidecar", "--election", "e", "--id", "a", "--listen", listen)
		require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
		require.Contains(t, res.Stderr, "needs --api-token-file")
	}
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	res := runInProcess(ctx, nil, "sidecar", "--election", "e", "--id", "a", "--listen", ":0", "--api-token-file", empty)
	require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "empty")

	typo := runInProcess(ctx, nil, "sidecar", "resgn")
	require.Equal(t, cmdutil.ExitUsage, typo.Code)
	require.Contains(t, typo.Stderr, "did you mean resign?")
}
