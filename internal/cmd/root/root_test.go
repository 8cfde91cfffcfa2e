package root

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/etcddial"
	"github.com/coordkit/coordkit/internal/nettest"
)

func TestGlobalFlagErrorsAreUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown write-out", []string{"-w", "yaml", "etcd"}, "invalid --write-out"},
		{"unknown flag", []string{"etcd", "--bogus"}, "unknown flag"},
		{"negative dial timeout", []string{"--dial-timeout", "-1s", "lock", "x"}, "--dial-timeout"},
		{"bad user", []string{"--user", "alice", "lock", "x"}, "NAME:PASSWORD"},
		{"extra argument", []string{"etcd", "extra"}, "unknown command"},
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

func TestUnreachableEtcdFailsFastNamingEndpoints(t *testing.T) {
	t.Parallel()
	f := cmdutil.NewFactory(cmdutil.IOStreams{})
	dead := nettest.ClosedAddr(t) // nothing listens there
	f.Global = cmdutil.GlobalOptions{Flags: etcddial.Flags{Endpoints: []string{dead}, DialTimeout: 500 * time.Millisecond, CommandTimeout: 5 * time.Second}, WriteOut: "simple"}
	start := time.Now()
	_, err := f.EtcdClient(context.Background())
	require.ErrorIs(t, err, etcddial.ErrUnreachable)
	require.Contains(t, err.Error(), dead)
	require.Less(t, time.Since(start), 1500*time.Millisecond)
	require.Equal(t, cmdutil.ExitError, cmdutil.ExitCode(err))
}
