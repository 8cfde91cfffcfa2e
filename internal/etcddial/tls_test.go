package etcddial

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/nettest"
)

// TestDialErrorsSayWhy runs a real etcd that serves clients over TLS only,
// requires client certificates and has auth enabled, and checks that every
// way of getting the connection wrong is reported with its cause, and that
// "unreachable" is kept for an endpoint where nothing answers. Moved from
// internal/cli's TestTLSAndAuthErrorsSayWhy, which ran the cases through
// 'coordctl claim get'; that test now checks that the flags reach Config
// and the errors' exit codes.
func TestDialErrorsSayWhy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := etcdtest.NewCA(t, dir, "etcd-ca")
	other := etcdtest.NewCA(t, dir, "other-ca")
	rootCert, rootKey := ca.Issue(t, dir, "root", false)
	strangerCert, strangerKey := other.Issue(t, dir, "root", false)

	srv := startTLSEtcd(t, dir, ca)
	ep := srv.Endpoints()[0]
	require.True(t, strings.HasPrefix(ep, "https://"), ep)
	hostport := strings.TrimPrefix(ep, "https://")

	// Create root with a password and enable auth, as an operator would.
	admin, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, TLS: etcdtest.ClientTLS(t, ca.File, rootCert, rootKey),
		DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = admin.UserAdd(ctx, "root", "s3cret")
	require.NoError(t, err)
	_, err = admin.UserGrantRole(ctx, "root", "root")
	require.NoError(t, err)
	_, err = admin.AuthEnable(ctx)
	require.NoError(t, err)
	require.NoError(t, admin.Close())

	dead := nettest.ClosedAddr(t)
	// etcd checks a password with bcrypt, slow under -race on a loaded
	// machine: the cases that authenticate get time; the others fail
	// whatever the timeout.
	const slow = 60 * time.Second
	plain := etcdtest.Start(t)
	good := Config{CACert: ca.File, Cert: rootCert, Key: rootKey}
	with := func(c Config, eps ...string) Config { c.Endpoints = eps; return c }
	cases := []struct {
		name     string
		cfg      Config
		is       error // nil: Dial succeeds
		want     string
		notWants []string
	}{
		{"right credentials", func() Config {
			c := with(good, ep)
			c.Username, c.Password, c.DialTimeout = "root", "s3cret", slow
			return c
		}(), nil, "", nil},
		{"wrong CA", Config{Endpoints: []string{ep}, CACert: other.File, Cert: rootCert, Key: rootKey},
			ErrTLS, "x509: certificate signed by unknown authority", []string{"unreachable", "deadline"}},
		{"client cert from another CA", Config{Endpoints: []string{ep}, CACert: ca.File, Cert: strangerCert, Key: strangerKey},
			ErrTLS, "rejected the client certificate", []string{"unreachable", "deadline"}},
		{"no client cert", Config{Endpoints: []string{ep}, CACert: ca.File},
			ErrTLS, "requires a client certificate", []string{"unreachable", "deadline"}},
		{"plain http to the TLS port", Config{Endpoints: []string{"http://" + hostport}},
			ErrTLS, "the endpoint speaks TLS; use https:// and --cacert", []string{"unreachable", "deadline"}},
		{"host:port without TLS flags", Config{Endpoints: []string{hostport}},
			ErrTLS, "the endpoint speaks TLS; use https:// and --cacert", []string{"unreachable", "deadline"}},
		{"wrong password", func() Config {
			c := with(good, ep)
			c.Username, c.Password, c.DialTimeout = "root", "wrong", slow
			return c
		}(),
			ErrAuth, "authentication failed for user root", []string{"unreachable", "deadline"}},
		{"TLS to a plain-text etcd", Config{Endpoints: []string{strings.Replace(plain.Endpoints()[0], "http://", "https://", 1)}, CACert: ca.File},
			ErrTLS, "does not speak TLS", []string{"unreachable", "deadline"}},
		{"nothing listens", with(good, "https://"+dead),
			ErrUnreachable, "etcd unreachable at https://" + dead, []string{"deadline"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Most cases wait out the 3s dial timeout.
			t.Parallel()
			cfg := tc.cfg
			if cfg.DialTimeout == 0 {
				cfg.DialTimeout = 3 * time.Second
			}
			cli, err := Dial(context.Background(), cfg)
			if tc.is == nil {
				require.NoError(t, err)
				defer cli.Close()
				ctx, cancel := context.WithTimeout(context.Background(), slow)
				defer cancel()
				_, err = cli.Get(ctx, "nobody")
				require.NoError(t, err, "authenticated as root")
				return
			}
			require.Error(t, err)
			t.Log(err)
			require.ErrorIs(t, err, tc.is)
			require.ErrorContains(t, err, tc.want)
			for _, nw := range tc.notWants {
				require.NotContains(t, err.Error(), nw)
			}
		})
	}
}

// startTLSEtcd starts a real etcd that serves clients over TLS only, with a
// server certificate of ca, and requires client certificates of ca.
func startTLSEtcd(t *testing.T, dir string, ca *etcdtest.CA) *etcdembed.Server {
	t.Helper()
	srvCert, srvKey := ca.Issue(t, dir, "server", true)
	srv, err := etcdembed.Start(context.Background(), etcdembed.Config{
		DataDir:       filepath.Join(dir, "etcd"),
		UnsafeNoFsync: true,
		ClientTLS: &etcdembed.ClientTLS{CertFile: srvCert, KeyFile: srvKey,
			TrustedCAFile: ca.File, ClientCertAuth: true},
	})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv
}
