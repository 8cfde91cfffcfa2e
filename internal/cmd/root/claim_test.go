package root

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/nettest"
)

type claimJSON struct {
	Name        string `json:"name"`
	Owner       string `json:"owner"`
	Revision    int64  `json:"revision"`
	Claimed     *bool  `json:"claimed"`
	Yours       *bool  `json:"yours"`
	Released    *bool  `json:"released"`
	Key         string `json:"key"`
	Lease       string `json:"lease"`
	TTLSeconds  int64  `json:"ttl_seconds"`
	LeftSeconds *int64 `json:"left_seconds"`
}

func decodeClaim(t *testing.T, res cliResult) claimJSON {
	t.Helper()
	require.Equal(t, 1, strings.Count(res.Stdout, "\n"), "one JSON line: %q", res.Stdout)
	var out claimJSON
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &out), res.Stdout)
	return out
}

func claimTestCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestClaimCLIExitCodesAndJSON(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	env := map[string]string{"COORDCTL_ENDPOINTS": srv.Endpoints()[0]}
	ctx := claimTestCtx(t)
	claimCmd := func(args ...string) cliResult {
		return runInProcess(ctx, env, append([]string{"claim"}, args...)...)
	}

	won := claimCmd("alice", "--owner", "node-1", "-w", "json")
	require.Equal(t, cmdutil.ExitOK, won.Code, won.Stderr)
	w := decodeClaim(t, won)
	require.Equal(t, "alice", w.Name)
	require.Equal(t, "node-1", w.Owner)
	require.Positive(t, w.Revision)
	require.True(t, *w.Claimed)
	require.True(t, *w.Yours)
	require.Equal(t, "coordkit/claims/alice", w.Key)
	require.Empty(t, w.Lease)

	lost := claimCmd("alice", "--owner", "node-2", "-w", "json")
	require.Equal(t, cmdutil.ExitNotAcquired, lost.Code, lost.Stderr)
	require.Empty(t, lost.Stderr)
	l := decodeClaim(t, lost)
	require.Equal(t, "node-1", l.Owner, "the loser learns the owner")
	require.Equal(t, w.Revision, l.Revision)
	require.False(t, *l.Claimed)
	require.False(t, *l.Yours)

	lostSimple := claimCmd("alice", "--owner", "node-2")
	require.Equal(t, cmdutil.ExitNotAcquired, lostSimple.Code)
	require.Contains(t, lostSimple.Stdout, `"alice" is taken: owned by node-1`)

	mine := claimCmd("alice", "--owner", "node-1")
	require.Equal(t, cmdutil.ExitOK, mine.Code, mine.Stderr)
	require.Contains(t, mine.Stdout, `"alice" is already yours, node-1`)

	get := claimCmd("get", "alice", "-w", "json")
	require.Equal(t, cmdutil.ExitOK, get.Code, get.Stderr)
	g := decodeClaim(t, get)
	require.Equal(t, "node-1", g.Owner)
	require.Equal(t, w.Revision, g.Revision)
	require.Nil(t, g.Claimed)
	require.Nil(t, g.LeftSeconds)

	refused := claimCmd("release", "alice", "--owner", "node-2")
	require.Equal(t, cmdutil.ExitNotAcquired, refused.Code)
	require.Empty(t, refused.Stdout)
	require.Contains(t, refused.Stderr, `not the owner: "alice" is held by "node-1"`)

	rel := claimCmd("release", "alice", "--owner", "node-1", "-w", "json")
	require.Equal(t, cmdutil.ExitOK, rel.Code, rel.Stderr)
	r := decodeClaim(t, rel)
	require.True(t, *r.Released)
	require.Equal(t, w.Revision, r.Revision)

	for _, args := range [][]string{{"get", "alice"}, {"release", "alice", "--owner", "node-1"}} {
		res := claimCmd(args...)
		require.Equal(t, cmdutil.ExitNotAcquired, res.Code, "%v", args)
		require.Contains(t, res.Stderr, `not claimed: nobody holds "alice"`)
	}

	simple := claimCmd("alice", "--owner", "node-2")
	require.Equal(t, cmdutil.ExitOK, simple.Code)
	require.Regexp(t, `^claimed "alice" for node-2 \(revision \d+\)\n$`, simple.Stdout)
}

func TestClaimCLITTLAndPrefix(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	env := map[string]string{"COORDCTL_ENDPOINTS": srv.Endpoints()[0]}
	ctx := claimTestCtx(t)

	res := runInProcess(ctx, env, "claim", "s", "--owner", "o", "--ttl", "1s", "--prefix", "myapp/names", "-w", "json")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	c := decodeClaim(t, res)
	require.Equal(t, "myapp/names/s", c.Key)
	require.NotEmpty(t, c.Lease)
	require.GreaterOrEqual(t, c.TTLSeconds, int64(2), "etcd raises 1s to its 2s minimum")
	kv, err := cli.Get(ctx, "myapp/names/s")
	require.NoError(t, err)
	require.Len(t, kv.Kvs, 1)
	require.Equal(t, "o", string(kv.Kvs[0].Value))

	// The claim's get, on a claim that outlives a starved machine (the 2s
	// one above expired before its get in a loaded run).
	res = runInProcess(ctx, env, "claim", "t", "--owner", "o", "--ttl", "30s", "--prefix", "myapp/names", "-w", "json")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	c = decodeClaim(t, res)
	get := runInProcess(ctx, env, "claim", "get", "t", "--prefix", "myapp/names", "-w", "json")
	require.Equal(t, cmdutil.ExitOK, get.Code, get.Stderr)
	g := decodeClaim(t, get)
	require.Equal(t, c.Lease, g.Lease)
	require.NotNil(t, g.LeftSeconds)
	require.LessOrEqual(t, *g.LeftSeconds, g.TTLSeconds)

	// A name that is also a subcommand can be claimed after "--".
	lit := runInProcess(ctx, env, "claim", "--owner", "o", "-w", "json", "--", "get")
	require.Equal(t, cmdutil.ExitOK, lit.Code, lit.Stderr)
	require.Equal(t, "coordkit/claims/get", decodeClaim(t, lit).Key)
}

func TestClaimCLIUsageAndUnreachable(t *testing.T) {
	t.Parallel()
	dead := nettest.ClosedAddr(t)
	env := map[string]string{"COORDCTL_ENDPOINTS": dead}
	ctx := claimTestCtx(t)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"empty name", []string{"claim", "", "--owner", "o"}, cmdutil.ExitUsage, "NAME must not be empty"},
		{"no owner", []string{"claim", "n"}, cmdutil.ExitUsage, "--owner is required"},
		{"ttl too short", []string{"claim", "n", "--owner", "o", "--ttl", "500ms"}, cmdutil.ExitUsage, "invalid --ttl 500ms"},
		{"negative ttl", []string{"claim", "n", "--owner", "o", "--ttl", "-2s"}, cmdutil.ExitUsage, "invalid --ttl"},
		{"no name", []string{"claim", "--owner", "o"}, cmdutil.ExitUsage, "accepts 1 arg"},
		{"release no owner", []string{"claim", "release", "n"}, cmdutil.ExitUsage, "--owner is required"},
		{"get two names", []string{"claim", "get", "a", "b"}, cmdutil.ExitUsage, "accepts 1 arg"},
		{"unreachable claim", []string{"--dial-timeout", "300ms", "claim", "n", "--owner", "o"}, cmdutil.ExitError, dead},
		{"unreachable get", []string{"--dial-timeout", "300ms", "claim", "get", "n"}, cmdutil.ExitError, dead},
		{"unreachable release", []string{"--dial-timeout", "300ms", "claim", "release", "n", "--owner", "o"}, cmdutil.ExitError, dead},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runInProcess(ctx, env, tc.args...)
			require.Equal(t, tc.code, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
			require.Empty(t, res.Stdout)
		})
	}
}
