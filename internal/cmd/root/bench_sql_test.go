package root

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/nettest"
)

func TestBenchSQLBadFlags(t *testing.T) {
	t.Parallel()
	cases := [][]string{
		{"bench", "sql", "--driver", "oracle"},
		{"bench", "sql", "--driver", "postgres"}, // no --dsn
		{"bench", "sql", "--iterations", "0"},
		{"bench", "sql", "--per-writer", "0"},
		{"bench", "sql", "--writers", "1"},
		{"bench", "sql", "--rounds", "-1"},
		{"bench", "sql", "--dsn", "file:x.db?_txlock=deferred"},
	}
	for _, args := range cases {
		res := runInProcess(context.Background(), nil, args...)
		require.Equal(t, cmdutil.ExitUsage, res.Code, "%v: %s", args, res.Stderr)
		require.Contains(t, res.Stderr, "Usage:")
	}
}

// An unreachable server: exit 1, the host named, the password not.
func TestBenchSQLUnreachable(t *testing.T) {
	t.Parallel()
	addr := nettest.ClosedAddr(t)
	res := runInProcess(context.Background(), nil, "bench", "sql", "--driver", "postgres", "--dsn", "postgres://root:s3cret@"+addr+"/x")
	require.Equal(t, cmdutil.ExitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, addr)
	require.NotContains(t, res.Stderr, "s3cret")
}
