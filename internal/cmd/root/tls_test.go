package root

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/etcddial"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

// The etcd flags reach etcddial.Config, and Dial's errors exit as they
// should with their words. What Dial says for each way of getting TLS or
// auth wrong, against a real TLS etcd with auth, is etcddial's
// TestDialErrorsSayWhy (moved from here); TestUnreachableEtcdFailsFastNamingEndpoints
// runs the real dialer through the factory.
func TestEtcdFlagsReachTheDialer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := etcdtest.NewCA(t, dir, "etcd-ca")
	cert, key := ca.Issue(t, dir, "root", false)
	tlsArgs := []string{"--cacert", ca.File, "--cert", cert, "--key", key}

	// dialWith runs coordctl args with stdin on a factory whose Dial
	// records its Config and fails with dialErr.
	env := map[string]string{}
	dialWith := func(dialErr error, stdin string, args ...string) (cfg etcddial.Config, code int, stderr string) {
		var out, errOut bytes.Buffer
		f := cmdutil.NewFactory(cmdutil.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
		f.Getenv = func(k string) string { return env[k] }
		f.Dial = func(_ context.Context, c etcddial.Config) (*clientv3.Client, error) {
			cfg = c
			return nil, dialErr
		}
		code = runFactory(context.Background(), f, args)
		return cfg, code, errOut.String()
	}
	tlsErr := fmt.Errorf("%w: https://127.0.0.1:1: etcd requires a client certificate: give --cert and --key", etcddial.ErrTLS)

	cfg, code, stderr := dialWith(tlsErr, "", append([]string{"claim", "get", "nobody", "--endpoints", "https://127.0.0.1:1,https://127.0.0.1:2",
		"--dial-timeout", "7s", "--user", "root:s3cret"}, tlsArgs...)...)
	require.Equal(t, etcddial.Config{Endpoints: []string{"https://127.0.0.1:1", "https://127.0.0.1:2"}, DialTimeout: 7 * time.Second,
		CACert: ca.File, Cert: cert, Key: key, Username: "root", Password: "s3cret"}, cfg)
	require.Equal(t, cmdutil.ExitError, code, stderr)
	require.Contains(t, stderr, "coordctl: etcd TLS failed: https://127.0.0.1:1: etcd requires a client certificate")

	t.Run("password from stdin", func(t *testing.T) {
		cfg, _, _ := dialWith(tlsErr, "s3cret\nfor the child\n", "claim", "get", "nobody", "--user", "root", "--password-stdin")
		require.Equal(t, "root", cfg.Username)
		require.Equal(t, "s3cret", cfg.Password)
		_, code, stderr := dialWith(nil, "\n", "claim", "get", "nobody", "--user", "root", "--password-stdin")
		require.Equal(t, cmdutil.ExitUsage, code, stderr)
		require.Contains(t, stderr, "--password-stdin: empty password on standard input")
	})
	t.Run("user from the environment", func(t *testing.T) {
		env[cmdutil.EnvUser] = "app:fr0m-env"
		defer delete(env, cmdutil.EnvUser)
		cfg, _, _ := dialWith(tlsErr, "", "claim", "get", "nobody")
		require.Equal(t, "app", cfg.Username)
		require.Equal(t, "fr0m-env", cfg.Password)
		cfg, _, _ = dialWith(tlsErr, "", "claim", "get", "nobody", "--user", "root:s3cret")
		require.Equal(t, "root", cfg.Username, "--user before the environment")
		env[cmdutil.EnvUser] = "app"
		cfg, _, _ = dialWith(tlsErr, "pw-from-stdin\n", "claim", "get", "nobody", "--password-stdin")
		require.Equal(t, "app", cfg.Username)
		require.Equal(t, "pw-from-stdin", cfg.Password)
	})
	t.Run("no user", func(t *testing.T) {
		cfg, _, _ := dialWith(tlsErr, "", "claim", "get", "nobody")
		require.Empty(t, cfg.Username)
		require.Empty(t, cfg.Password)
		require.Equal(t, []string{cmdutil.DefaultEndpoint}, cfg.Endpoints)
	})
	for _, tc := range []struct {
		name string
		err  error
		code int
	}{
		{"auth refused", fmt.Errorf("%w for user root: wrong name or password", etcddial.ErrAuth), cmdutil.ExitError},
		{"unreachable", fmt.Errorf("%w at 127.0.0.1:1: nothing answered", etcddial.ErrUnreachable), cmdutil.ExitError},
		{"TLS files that do not make a configuration", fmt.Errorf("%w: bad key", etcddial.ErrTLSConfig), cmdutil.ExitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, code, stderr := dialWith(tc.err, "", "claim", "get", "nobody")
			require.Equal(t, tc.code, code, stderr)
			require.Contains(t, stderr, "coordctl: "+tc.err.Error())
		})
	}
}
