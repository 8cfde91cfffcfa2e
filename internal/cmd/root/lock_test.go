package root

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/nettest"
	"github.com/coordkit/coordkit/lock"
)

func TestLockCmdBadFlagsAreUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no name", []string{"lock"}, "NAME"},
		{"zero ttl", []string{"lock", "x", "--ttl", "0s"}, "--ttl"},
		{"negative ttl", []string{"lock", "x", "--ttl", "-1s"}, "--ttl"},
		{"ttl under a second", []string{"lock", "x", "--ttl", "500ms"}, "at least 1s"},
		{"negative timeout", []string{"lock", "x", "--timeout", "-1s"}, "--timeout"},
		{"try with timeout", []string{"lock", "x", "--try", "--timeout", "1s"}, "exclude"},
		{"zero kill grace", []string{"lock", "x", "--kill-grace", "0s"}, "--kill-grace"},
		{"command without dash", []string{"lock", "x", "true"}, "after --"},
		{"two names", []string{"lock", "x", "y", "--", "true"}, "one NAME"},
		{"dash first", []string{"lock", "--", "true"}, "NAME"},
		{"bad duration", []string{"lock", "x", "--ttl", "soon"}, "invalid argument"},
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

func TestLockCmdUnreachableEtcdExits1InTime(t *testing.T) {
	t.Parallel()
	dead := nettest.ClosedAddr(t)
	start := time.Now()
	res := runInProcess(context.Background(), map[string]string{"COORDCTL_ENDPOINTS": dead},
		"--dial-timeout", "500ms", "lock", "x", "--", "true")
	require.Equal(t, cmdutil.ExitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, dead)
	require.Less(t, time.Since(start), 1500*time.Millisecond)
}

// holdWithLibrary takes the lock NAME through the library, as another
// process would, and returns the holder.
func holdWithLibrary(t *testing.T, cli *clientv3.Client, name string) *lock.Held {
	t.Helper()
	m, err := lock.New(cli, name)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	h, err := m.Lock(context.Background())
	require.NoError(t, err)
	return h
}

func TestLockCmdNotAcquiredExits3(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	env := map[string]string{"COORDCTL_ENDPOINTS": srv.Endpoints()[0]}
	h := holdWithLibrary(t, cli, "busy")

	t.Run("try", func(t *testing.T) {
		start := time.Now()
		res := runInProcess(context.Background(), env, "lock", "busy", "--try", "--", "true")
		require.Equal(t, cmdutil.ExitNotAcquired, res.Code, res.Stderr)
		require.Contains(t, res.Stderr, h.Key())
		require.Less(t, time.Since(start), 3*time.Second)
	})
	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		// The notice comes WaitNoticeAfter after the first look found the
		// holder, and only while the wait lasts: 2s leaves room for a slow
		// first look.
		res := runInProcess(context.Background(), env, "lock", "busy", "--timeout", "2s", "--", "true")
		require.Equal(t, cmdutil.ExitNotAcquired, res.Code, res.Stderr)
		require.Contains(t, res.Stderr, "not acquired within 2s")
		require.Contains(t, res.Stderr, "waiting for lock busy (held by key "+h.Key()+", token "+h.Token().String()+")...")
		require.Equal(t, 1, strings.Count(res.Stderr, "waiting for lock"))
		require.Less(t, time.Since(start), 5*time.Second)
	})
	t.Run("short wait is not reported", func(t *testing.T) {
		res := runInProcess(context.Background(), env, "lock", "busy", "--timeout", "200ms", "--", "true")
		require.Equal(t, cmdutil.ExitNotAcquired, res.Code, res.Stderr)
		require.NotContains(t, res.Stderr, "waiting for lock")
	})
	resp, err := cli.Get(context.Background(), "busy/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "waiters that gave up must leave no key behind")
	require.NoError(t, h.Unlock(context.Background()))
}

// waitForKey polls etcd until a key exists under prefix and returns it.
func waitForKey(t *testing.T, cli *clientv3.Client, prefix string) *clientv3.GetResponse {
	t.Helper()
	var resp *clientv3.GetResponse
	require.Eventually(t, func() bool {
		var err error
		resp, err = cli.Get(context.Background(), prefix, clientv3.WithPrefix())
		return err == nil && len(resp.Kvs) > 0
	}, 10*time.Second, 5*time.Millisecond)
	return resp
}

// Without a command, lock prints the holder, holds until interrupted and
// releases (exit 0), or exits 4 when the lock is lost.
func TestLockCmdHoldsWithoutCommand(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	env := map[string]string{"COORDCTL_ENDPOINTS": srv.Endpoints()[0]}

	t.Run("interrupt releases", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan cliResult, 1)
		holding := make(chan struct{})
		go func() {
			done <- runInProcessNotify(ctx, env, holding, "-w", "json", "lock", "hold", "--prefix", "ns/")
		}()
		// The key exists before Lock returns; interrupt only once the holder
		// line is out (an interrupt before that is "not acquired", exit 3).
		select {
		case <-holding:
		case <-time.After(10 * time.Second):
			t.Fatal("lock printed no holder line")
		}
		resp := waitForKey(t, cli, "ns/hold/")
		cancel() // as SIGINT would
		var res cliResult
		select {
		case res = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("lock did not stop")
		}
		require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
		var out struct {
			Name  string
			Key   string
			Token int64
			Lease string
		}
		require.NoError(t, json.Unmarshal([]byte(res.Stdout), &out), res.Stdout)
		kv := resp.Kvs[0]
		require.Equal(t, "hold", out.Name)
		require.Equal(t, string(kv.Key), out.Key)
		require.Equal(t, kv.CreateRevision, out.Token)
		require.Equal(t, strings.TrimPrefix(out.Key, "ns/hold/"), out.Lease)
		after, err := cli.Get(context.Background(), "ns/hold/", clientv3.WithPrefix())
		require.NoError(t, err)
		require.Empty(t, after.Kvs, "released on interrupt")
	})
	t.Run("loss exits 4", func(t *testing.T) {
		done := make(chan cliResult, 1)
		holding := make(chan struct{})
		go func() { done <- runInProcessNotify(context.Background(), env, holding, "lock", "gone") }()
		select { // revoke once it holds (before that, the loss is a failed Lock)
		case <-holding:
		case <-time.After(10 * time.Second):
			t.Fatal("lock printed no holder line")
		}
		resp := waitForKey(t, cli, "gone/")
		_, err := cli.Revoke(context.Background(), clientv3.LeaseID(resp.Kvs[0].Lease))
		require.NoError(t, err)
		var res cliResult
		select {
		case res = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("lock did not notice the loss")
		}
		require.Equal(t, cmdutil.ExitLost, res.Code, res.Stderr)
		require.Contains(t, res.Stdout, "holding lock gone scope=gone/ key="+string(resp.Kvs[0].Key))
		require.Contains(t, res.Stderr, "lost lock gone")
	})
}
