package root

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// bench lab's invalid options are usage errors (the harness's Validate).
func TestBenchLabUsageErrors(t *testing.T) {
	t.Parallel()
	require.Equal(t, cmdutil.ExitUsage, runInProcess(context.Background(), nil, "bench", "lab", "--nodes", "9").Code)
	require.Equal(t, cmdutil.ExitUsage, runInProcess(context.Background(), nil, "bench", "lab", "--duration", "0s").Code)
}
