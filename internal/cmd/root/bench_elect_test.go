package root

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

func TestBenchElectUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"bench", "elect", "--rounds", "0"},
		{"bench", "elect", "--crash-rounds", "-1"},
		{"bench", "elect", "extra"},
	} {
		res := runInProcess(context.Background(), nil, args...)
		require.Equal(t, cmdutil.ExitUsage, res.Code, "%v: %s", args, res.Stderr)
	}
}
