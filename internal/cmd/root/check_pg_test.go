package root

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

func TestCheckPGAdvisoryUsageErrors(t *testing.T) {
	ctx := context.Background()
	for name, args := range map[string][]string{
		"no dsn":        {"--lock", "pg-advisory"},
		"semaphore":     {"--lock", "pg-advisory", "--dsn", "postgres://x", "--kind", "semaphore"},
		"no fencing":    {"--lock", "pg-advisory", "--dsn", "postgres://x", "--no-fencing"},
		"resource flag": {"--lock", "pg-advisory", "--dsn", "postgres://x", "--resource", "sql"},
		"with redis":    {"--lock", "pg-advisory", "--dsn", "postgres://x", "--redis", "127.0.0.1:6379"},
		"history":       {"--lock", "pg-advisory", "--dsn", "postgres://x", "--history", "h.json"},
	} {
		t.Run(name, func(t *testing.T) {
			res := runInProcess(ctx, nil, append([]string{"check", "lock-safety", "--duration", "5s"}, args...)...)
			require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
		})
	}
	res := runInProcess(ctx, nil, "check", "pg-advisory-lock", "--name", "x")
	require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
	res = runInProcess(ctx, nil, "check", "sql-rmw", "--dsn", "postgres://x")
	require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
}
