package root

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/nettest"
)

func TestBenchLockBadFlags(t *testing.T) {
	t.Parallel()
	cases := [][]string{
		{"bench", "lock", "--iterations", "0"},
		{"bench", "lock", "--handoffs", "-1"},
		{"bench", "lock", "--duration", "0s"},
		{"bench", "lock", "--workers", "1"},
		{"bench", "lock", "--hold", "-1ms"},
	}
	for _, args := range cases {
		res := runInProcess(context.Background(), nil, args...)
		require.Equal(t, cmdutil.ExitUsage, res.Code, "%v: %s", args, res.Stderr)
		require.Contains(t, res.Stderr, "Usage:")
	}
}

func TestBenchLockAgainstBadInput(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"bench", "lock", "--against", "nosuch"},
		{"bench", "lock", "--against", "redsync"},
		{"bench", "lock", "--redis", "127.0.0.1:6379"},
	} {
		res := runInProcess(context.Background(), nil, args...)
		require.Equal(t, cmdutil.ExitUsage, res.Code, "%v: %s", args, res.Stderr)
		require.Contains(t, res.Stderr, "Usage:")
	}
}

// An address nobody answers on: exit 1 naming it, before etcd starts.
func TestBenchLockRedisUnreachable(t *testing.T) {
	t.Parallel()
	addr := nettest.ClosedAddr(t)
	res := runInProcess(context.Background(), nil, "bench", "lock", "--against", "redsync", "--redis", addr)
	require.Equal(t, cmdutil.ExitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, addr)
	require.Contains(t, res.Stderr, "redis unreachable")
	require.NotContains(t, res.Stderr, "starting embedded etcd")
}
