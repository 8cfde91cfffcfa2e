package root

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

func TestBenchRWLockAndSemBadFlags(t *testing.T) {
	t.Parallel()
	cases := [][]string{
		{"bench", "rwlock", "--batches", "0"},
		{"bench", "rwlock", "--readers", "65"},
		{"bench", "rwlock", "--handoffs", "0"},
		{"bench", "rwlock", "--duration", "0s"},
		{"bench", "rwlock", "--hold", "-1ms"},
		{"bench", "sem", "--limits", "0"},
		{"bench", "sem", "--duration", "0s"},
		{"bench", "sem", "--handoffs", "0"},
	}
	for _, args := range cases {
		res := runInProcess(context.Background(), nil, args...)
		require.Equal(t, cmdutil.ExitUsage, res.Code, "%v: %s", args, res.Stderr)
		require.Contains(t, res.Stderr, "Usage:")
	}
}
