package root

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

func TestDemoRejectsBadTTL(t *testing.T) {
	t.Parallel()
	res := runInProcess(context.Background(), nil, "demo", "--ttl", "1500ms")
	require.Equal(t, cmdutil.ExitUsage, res.Code)
	require.Contains(t, res.Stderr, "invalid --ttl 1.5s: want whole seconds, at least 2s")
	res = runInProcess(context.Background(), nil, "demo", "--out", "")
	require.Equal(t, cmdutil.ExitUsage, res.Code)
	require.Contains(t, res.Stderr, "--out must not be empty")
}
