package root

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/lock"
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
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	res = runInProcess(ctx, env, "lock", "mixed", "--timeout", "20s", "--", "true")
	require.Equal(t, cmdutil.ExitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, `name "mixed" is a semaphore's (key mixed/limit exists)`)
	require.Contains(t, res.Stderr, "coordctl sem delete")
	res = runInProcess(ctx, env, "lock", "status", "mixed")
	require.Equal(t, cmdutil.ExitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "semaphore's")

	res = runInProcess(ctx, env, "sem", "mixed", "--limit", "3", "--try", "--", "true")
	require.Equal(t, cmdutil.ExitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "coordctl sem set-limit mixed N")
	res = runInProcess(ctx, env, "sem", "set-limit", "mixed", "3", "-w", "json")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.JSONEq(t, `{"name":"mixed","limit":3}`, res.Stdout)
	res = runInProcess(ctx, env, "sem", "mixed", "--limit", "3", "--try", "--", "true")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)

	res = runInProcess(ctx, env, "sem", "set-limit", "mixed", "0")
	require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
	res = runInProcess(ctx, env, "sem", "delete", "mixed")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "deleted semaphore mixed")
	res = runInProcess(ctx, env, "lock", "mixed", "--try", "--", "true")
	require.Equal(t, cmdutil.ExitOK, res.Code, "the name is free for a lock now: %s", res.Stderr)

	res = runInProcess(ctx, env, "lock", "nest2/read", "--try", "--", "true")
	require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, `ends in "read"`)
}

// coordctl elect on a semaphore's name exits 1 naming the key — campaign,
// --observe (which does not retry for ever) and --candidates — and a lock
// named NAME/child is no leader of the election NAME.
func TestElectOnASemaphoresName(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	env := map[string]string{"COORDCTL_ENDPOINTS": srv.Endpoints()[0]}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	res := runInProcess(ctx, env, "sem", "mixed", "--limit", "2", "--", "true")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	for _, args := range [][]string{{"elect", "mixed", "--id", "a"}, {"elect", "mixed", "--observe"}, {"elect", "mixed", "--candidates"}} {
		res = runInProcess(ctx, env, args...)
		require.Equal(t, cmdutil.ExitError, res.Code, "%v: %s", args, res.Stderr)
		require.Contains(t, res.Stderr, `name "mixed" is a semaphore's (key mixed/limit exists)`, args)
	}

	child, err := lock.New(cli, "nest/child")
	require.NoError(t, err)
	defer child.Close()
	h, err := child.Lock(ctx)
	require.NoError(t, err)
	defer func() { _ = h.Unlock(ctx) }()
	res = runInProcess(ctx, env, "-w", "json", "elect", "nest", "--candidates")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.JSONEq(t, `{"event":"candidates","name":"nest","candidates":[]}`, res.Stdout)
}
