package root

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

func TestBenchScaleBadFlags(t *testing.T) {
	t.Parallel()
	cases := [][]string{
		{"bench", "scale", "--waiters", "0"},
		{"bench", "scale", "--members", "2"},
		{"bench", "scale", "--shapes", "1by5"},
		{"bench", "scale", "--curves", "queue,nope"},
		{"bench", "scale", "--sessions", "65"},
	}
	for _, args := range cases {
		res := runInProcess(context.Background(), nil, args...)
		require.Equal(t, cmdutil.ExitUsage, res.Code, "%v: %s", args, res.Stderr)
		require.Contains(t, res.Stderr, "Usage:")
	}
}
