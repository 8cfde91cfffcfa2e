package cli

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
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
		require.Equal(t, exitUsage, res.Code, "%v: %s", args, res.Stderr)
		require.Contains(t, res.Stderr, "Usage:")
	}
}

// An unreachable server: exit 1, the host named, the password not.
func TestBenchSQLUnreachable(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	res := runInProcess(context.Background(), nil, "bench", "sql", "--driver", "postgres", "--dsn", "postgres://root:s3cret@"+addr+"/x")
	require.Equal(t, exitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, addr)
	require.NotContains(t, res.Stderr, "s3cret")
}

// A tiny run on a SQLite file: the JSON contract, not performance.
func TestBenchSQLJSON(t *testing.T) {
	t.Parallel()
	res := runInProcess(context.Background(), nil, "-w", "json", "bench", "sql", "--dsn", t.TempDir()+"/b.db",
		"--iterations", "4", "--per-writer", "2", "--writers", "3", "--rounds", "2")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	var out struct {
		Benchmark, Driver, Server string
		Writers                   int
		Rows                      []struct {
			Metric           string
			Fenced, Unfenced float64
			Unit             string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &out), res.Stdout)
	require.Equal(t, "sql", out.Benchmark)
	require.Equal(t, "sqlite", out.Driver)
	require.Equal(t, 3, out.Writers)
	require.Len(t, out.Rows, 9)
	for _, r := range out.Rows {
		require.Positive(t, r.Fenced, r.Metric)
		require.Positive(t, r.Unfenced, r.Metric)
	}
	require.Equal(t, "distinct_3_p50_ms", out.Rows[3].Metric)
	require.Contains(t, res.Stderr, "dropped at the end")
}
