package root

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/semaphore"
)

func TestSemAndLockNewFlagsAreUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"sem no name", []string{"sem", "--limit", "2"}, "NAME"},
		{"sem no limit", []string{"sem", "x", "--", "true"}, "--limit"},
		{"sem zero limit", []string{"sem", "x", "--limit", "0"}, "--limit"},
		{"sem try with timeout", []string{"sem", "x", "--limit", "1", "--try", "--timeout", "1s"}, "exclude"},
		{"sem negative delay", []string{"sem", "x", "--limit", "1", "--lock-delay", "-1s"}, "--lock-delay"},
		{"sem ttl under a second", []string{"sem", "x", "--limit", "1", "--ttl", "500ms"}, "at least 1s"},
		{"sem command without dash", []string{"sem", "x", "--limit", "1", "true"}, "after --"},
		{"sem status no name", []string{"sem", "status"}, "--name status"},
		{"lock negative delay", []string{"lock", "x", "--lock-delay", "-1s"}, "--lock-delay"},
		{"lock status no name", []string{"lock", "status"}, "--name status"},
		{"lock status two names", []string{"lock", "status", "a", "b"}, "exactly one NAME"},
		{"lock name twice", []string{"lock", "x", "--name", "y"}, "--name"},
		{"lock name and argument", []string{"lock", "--name", "y", "x", "--", "true"}, "once"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runInProcess(context.Background(), nil, tc.args...)
			require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
			require.Contains(t, res.Stderr, "Usage:")
		})
	}
}

// "coordctl lock status" is the subcommand; a lock named "status" is still
// reachable with --name.
func TestLockNamedStatusThroughNameFlag(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	env := map[string]string{"COORDCTL_ENDPOINTS": srv.Endpoints()[0]}
	res := runInProcess(context.Background(), env, "lock", "--name", "status", "--try", "--",
		"sh", "-c", `echo "$COORD_LOCK_NAME $COORD_LOCK_KEY"`)
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Regexp(t, `^status status/[0-9a-f]+\n$`, res.Stdout)
	h := holdWithLibrary(t, cli, "status")
	res = runInProcess(context.Background(), env, "lock", "--name", "status", "--try", "--", "true")
	require.Equal(t, cmdutil.ExitNotAcquired, res.Code, res.Stderr)
	res = runInProcess(context.Background(), env, "lock", "status", "status", "-w", "json")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, h.Key())
}

// A child of coordctl sem fences per slot: resource put takes the slot's
// scope from COORD_FENCING_SCOPE, never the name from COORD_LOCK_NAME.
func TestResourceCmdScopeFromFencingScope(t *testing.T) {
	t.Parallel()
	url := startTestResource(t)
	env := map[string]string{"COORD_FENCING_TOKEN": "12", "COORD_LOCK_NAME": "pool", "COORD_FENCING_SCOPE": "pool/slots/1", "COORD_SEM_SLOT": "1"}
	res := runInProcess(context.Background(), env, "resource", "put", "k", "v", "--url", url, "-w", "json")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, `"scope":"pool/slots/1"`)
	// Slot 0 has its own floor: a lower token is admitted there.
	env["COORD_FENCING_TOKEN"], env["COORD_FENCING_SCOPE"] = "5", "pool/slots/0"
	res = runInProcess(context.Background(), env, "resource", "put", "k", "v", "--url", url, "-w", "json")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, `"scope":"pool/slots/0"`)
	env["COORD_FENCING_SCOPE"] = "pool/slots/1"
	res = runInProcess(context.Background(), env, "resource", "put", "k", "v", "--url", url)
	require.Equal(t, cmdutil.ExitStale, res.Code, res.Stderr)
}

type statusJSON struct {
	Name     string
	Revision int64
	Limit    int
	Held     bool
	Holders  []statusEntryJSON
	Waiters  []statusEntryJSON
}

type statusEntryJSON struct {
	Key   string
	Token int64
	Lease string
	Mode  string
	Slot  *int
	Scope string
	TTL   *int64 `json:"ttl_s"`
}

func decodeStatus(t *testing.T, out string) statusJSON {
	t.Helper()
	var st statusJSON
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	return st
}

// lock status reads a lock taken by etcd's own concurrency.Mutex: holder
// with its lease and TTL, the waiter behind it; exit 0 held, 3 free.
func TestLockStatusOfConcurrencyMutex(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	env := map[string]string{"COORDCTL_ENDPOINTS": srv.Endpoints()[0]}
	ctx := context.Background()

	res := runInProcess(ctx, env, "lock", "status", "cm")
	require.Equal(t, cmdutil.ExitNotAcquired, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "lock cm: free")
	require.Empty(t, res.Stderr, "free is an answer, not an error")

	s1, err := concurrency.NewSession(cli, concurrency.WithTTL(30))
	require.NoError(t, err)
	defer s1.Close()
	m1 := concurrency.NewMutex(s1, "cm")
	require.NoError(t, m1.Lock(ctx))
	s2, err := concurrency.NewSession(cli, concurrency.WithTTL(30))
	require.NoError(t, err)
	defer s2.Close()
	m2 := concurrency.NewMutex(s2, "cm")
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	locked := make(chan error, 1)
	go func() { locked <- m2.Lock(wctx) }()
	waiterKey := fmt.Sprintf("cm/%x", int64(s2.Lease()))
	require.Eventually(t, func() bool {
		resp, err := cli.Get(ctx, waiterKey)
		return err == nil && len(resp.Kvs) == 1
	}, 10*time.Second, 10*time.Millisecond)

	res = runInProcess(ctx, env, "lock", "status", "cm", "-w", "json")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	st := decodeStatus(t, res.Stdout)
	require.True(t, st.Held)
	require.Equal(t, "cm", st.Name)
	require.Len(t, st.Holders, 1)
	require.Equal(t, m1.Key(), st.Holders[0].Key)
	require.Equal(t, m1.Header().Revision, st.Holders[0].Token, "token = the holder key's create revision")
	require.Equal(t, fmt.Sprintf("%x", int64(s1.Lease())), st.Holders[0].Lease)
	require.Equal(t, "exclusive", st.Holders[0].Mode)
	require.NotNil(t, st.Holders[0].TTL)
	require.Positive(t, *st.Holders[0].TTL)
	require.Len(t, st.Waiters, 1)
	require.Equal(t, waiterKey, st.Waiters[0].Key)
	require.Nil(t, st.Waiters[0].TTL)

	res = runInProcess(ctx, env, "lock", "status", "cm")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "lock cm: held at revision")
	require.Contains(t, res.Stdout, "holder exclusive")
	require.Contains(t, res.Stdout, "key="+m1.Key())
	require.Contains(t, res.Stdout, "waiter exclusive")

	require.NoError(t, m1.Unlock(ctx))
	require.NoError(t, <-locked)
	require.NoError(t, m2.Unlock(ctx))
}

// sem status: limit, holders by slot with their scope, waiters in order.
func TestSemStatusInProcess(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	env := map[string]string{"COORDCTL_ENDPOINTS": srv.Endpoints()[0]}
	ctx := context.Background()
	res := runInProcess(ctx, env, "sem", "status", "pool", "-w", "json")
	require.Equal(t, cmdutil.ExitNotAcquired, res.Code, res.Stderr)
	st := decodeStatus(t, res.Stdout)
	require.False(t, st.Held)
	require.Zero(t, st.Limit)

	var held []*semaphore.Held
	for range 2 {
		s, err := semaphore.New(cli, "pool", 2)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		h, err := s.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, h)
	}
	s3, err := semaphore.New(cli, "pool", 2)
	require.NoError(t, err)
	defer s3.Close()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		h, err := s3.Acquire(wctx)
		if err == nil {
			err = h.Release(ctx)
		}
		got <- err
	}()
	require.Eventually(t, func() bool {
		resp, err := cli.Get(ctx, "pool/queue/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 1
	}, 10*time.Second, 10*time.Millisecond)

	res = runInProcess(ctx, env, "sem", "status", "pool", "-w", "json")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	st = decodeStatus(t, res.Stdout)
	require.True(t, st.Held)
	require.Equal(t, 2, st.Limit)
	require.Len(t, st.Holders, 2)
	for i, h := range st.Holders {
		require.NotNil(t, h.Slot)
		require.Equal(t, i, *h.Slot)
		require.Equal(t, fmt.Sprintf("pool/slots/%d", i), h.Scope)
		require.Positive(t, *h.TTL)
	}
	require.Len(t, st.Waiters, 1)

	res = runInProcess(ctx, env, "sem", "status", "pool")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "semaphore pool: held at revision")
	require.Contains(t, res.Stdout, "limit 2 by 2, 1 waiting")
	require.Contains(t, res.Stdout, "scope=pool/slots/0")

	require.NoError(t, held[0].Release(ctx))
	require.NoError(t, <-got)
	require.NoError(t, held[1].Release(ctx))
	res = runInProcess(ctx, env, "sem", "status", "pool")
	require.Equal(t, cmdutil.ExitNotAcquired, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "semaphore pool: free")
}

// A --limit that differs from the stored one is an error (exit 1) that
// names the stored limit; it neither waits nor takes a slot.
func TestSemCmdLimitMismatch(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	env := map[string]string{"COORDCTL_ENDPOINTS": srv.Endpoints()[0]}
	s, err := semaphore.New(cli, "mis", 2)
	require.NoError(t, err)
	defer s.Close()
	h, err := s.Acquire(context.Background())
	require.NoError(t, err)
	res := runInProcess(context.Background(), env, "sem", "mis", "--limit", "3", "--", "true")
	require.Equal(t, cmdutil.ExitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "limit 2")
	require.NoError(t, h.Release(context.Background()))
}
