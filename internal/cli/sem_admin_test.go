package cli

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

// The tester's reproductions: after 'sem mixed', 'lock mixed' no longer
// waits for ever behind the lease-less limit key, and lock status does not
// call it held; a typo'd limit can be changed or the semaphore deleted.
func TestSemNameAsLockAndAdmin(t *testing.T) {
	t.Parallel()
	srv, _ := etcdtest.StartWithClient(t)
	env := map[string]string{"COORDCTL_ENDPOINTS": srv.Endpoints()[0]}
	ctx := context.Background()

	res := runInProcess(ctx, env, "sem", "mixed", "--limit", "2", "--", "true")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	res = runInProcess(ctx, env, "lock", "mixed", "--timeout", "20s", "--", "true")
	require.Equal(t, exitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, `name "mixed" is a semaphore's (key mixed/limit exists)`)
	require.Contains(t, res.Stderr, "coordctl sem delete")
	res = runInProcess(ctx, env, "lock", "status", "mixed")
	require.Equal(t, exitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "semaphore's")

	res = runInProcess(ctx, env, "sem", "mixed", "--limit", "3", "--try", "--", "true")
	require.Equal(t, exitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "coordctl sem set-limit mixed N")
	res = runInProcess(ctx, env, "sem", "set-limit", "mixed", "3", "-w", "json")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	require.JSONEq(t, `{"name":"mixed","limit":3}`, res.Stdout)
	res = runInProcess(ctx, env, "sem", "mixed", "--limit", "3", "--try", "--", "true")
	require.Equal(t, exitOK, res.Code, res.Stderr)

	res = runInProcess(ctx, env, "sem", "set-limit", "mixed", "0")
	require.Equal(t, exitUsage, res.Code, res.Stderr)
	res = runInProcess(ctx, env, "sem", "delete", "mixed")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "deleted semaphore mixed")
	res = runInProcess(ctx, env, "lock", "mixed", "--try", "--", "true")
	require.Equal(t, exitOK, res.Code, "the name is free for a lock now: %s", res.Stderr)

	res = runInProcess(ctx, env, "lock", "nest2/read", "--try", "--", "true")
	require.Equal(t, exitUsage, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, `ends in "read"`)
}
