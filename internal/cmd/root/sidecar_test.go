package root

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

func TestSidecarCLIUsageAndUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no election", []string{"sidecar", "--id", "a"}, "--election is required"},
		{"no id", []string{"sidecar", "--election", "e"}, "--id is required"},
		{"short ttl", []string{"sidecar", "--election", "e", "--id", "a", "--ttl", "500ms"}, "at least 1s"},
		{"bad listen", []string{"sidecar", "--election", "e", "--id", "a", "--listen", "nonsense"}, "invalid --listen"},
		{"bad port", []string{"sidecar", "--election", "e", "--id", "a", "--listen", "127.0.0.1:99999"}, "bad port"},
		{"bad grace", []string{"sidecar", "--election", "e", "--id", "a", "--kill-grace", "0s"}, "--kill-grace"},
		{"args without dash", []string{"sidecar", "--election", "e", "--id", "a", "sleep", "1"}, "after --"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runInProcess(ctx, nil, tc.args...)
			require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
		})
	}
	t.Run("unreachable etcd until the start timeout", func(t *testing.T) {
		// The sidecar serves and retries; only --start-timeout ends it.
		start := time.Now()
		res := runInProcess(ctx, nil, "--endpoints", "127.0.0.1:1", "--dial-timeout", "500ms",
			"sidecar", "--election", "e", "--id", "a", "--listen", "127.0.0.1:0", "--start-timeout", "1500ms")
		require.Equal(t, cmdutil.ExitError, res.Code, res.Stderr)
		require.GreaterOrEqual(t, time.Since(start), 1500*time.Millisecond, "not before the start timeout")
		require.Contains(t, res.Stdout, "ready url=http://127.0.0.1:", "it served while it waited")
		require.Contains(t, res.Stderr, "coordctl sidecar: connecting to etcd: attempt 1 failed: etcd unreachable at 127.0.0.1:1")
		require.Contains(t, res.Stderr, "--start-timeout 1.5s: etcd not reached within the start timeout (1.5s, ")
		require.Contains(t, res.Stderr, "etcd unreachable at 127.0.0.1:1", "the last attempt's error, not the deadline's")
	})
	t.Run("negative start timeout", func(t *testing.T) {
		res := runInProcess(ctx, nil, "sidecar", "--election", "e", "--id", "a", "--start-timeout", "-1s")
		require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
		require.Contains(t, res.Stderr, "invalid --start-timeout -1s")
	})
}

func TestSidecarCLISimpleOutput(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var out, errOut notifyingBuffer
	codec := make(chan int, 1)
	go func() {
		codec <- run(runCtx, []string{"--endpoints", strings.Join(srv.Endpoints(), ","),
			"sidecar", "--election", "simple", "--id", "a", "--listen", "127.0.0.1:0"},
			cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, func(string) string { return "" })
	}()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "elected id=a") }, 10*time.Second, 10*time.Millisecond)
	e, err := election.New(cli, "simple")
	require.NoError(t, err)
	l, err := e.Leader(ctx)
	require.NoError(t, err)
	stop()
	select {
	case code := <-codec:
		require.Equal(t, cmdutil.ExitOK, code, errOut.String())
	case <-time.After(15 * time.Second):
		t.Fatal("sidecar did not stop")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Regexp(t, `^ready url=http://127\.0\.0\.1:\d+$`, lines[0])
	tok := l.Token.String()
	require.Contains(t, lines, "elected id=a token="+tok)
	require.Contains(t, lines, "leader id=a token="+tok)
	require.Contains(t, lines, `lost id=a reason="shutting down"`)
	require.Equal(t, "leader none", lines[len(lines)-1])
	require.Contains(t, errOut.String(), "coordctl sidecar: connected")
	_, err = e.Leader(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader)
}
