package etcddial

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/nettest"
)

func TestDialAnswers(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	cli, err := Dial(context.Background(), Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = cli.Get(ctx, "x")
	require.NoError(t, err)
}

// Nothing listens: ErrUnreachable naming the endpoint, within about the
// dial timeout (a refused dial is not retried until the bound).
func TestDialUnreachableNamesEndpoints(t *testing.T) {
	t.Parallel()
	dead := nettest.ClosedAddr(t)
	_, err := Dial(context.Background(), Config{Endpoints: []string{dead}, DialTimeout: 500 * time.Millisecond})
	require.ErrorIs(t, err, ErrUnreachable)
	require.Contains(t, err.Error(), "etcd unreachable at "+dead)
	require.Contains(t, err.Error(), "--dial-timeout 500ms")
}

// An etcd that accepts connections and answers nothing (a frozen process:
// its kernel still completes the TCP handshake): the error says so, within
// the dial timeout. The diagnosis that finds it used to start only after
// the requests had given up, and took as long again: 2x --dial-timeout.
func TestDialSilentEtcdWithinTheDialTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() }) // held open, never answered
		}
	}()
	const timeout = time.Second
	start := time.Now()
	_, err = Dial(context.Background(), Config{Endpoints: []string{ln.Addr().String()}, DialTimeout: timeout})
	took := time.Since(start)
	t.Logf("a silent etcd: %v after %s", err, took.Round(time.Millisecond))
	require.ErrorContains(t, err, "etcd at "+ln.Addr().String()+": it accepted the connection but did not answer within --dial-timeout 1s")
	require.Less(t, took, timeout+700*time.Millisecond, "the dial took longer than --dial-timeout (2x before)")
}

func TestDialTLSConfigError(t *testing.T) {
	t.Parallel()
	_, err := Dial(context.Background(), Config{Endpoints: []string{"127.0.0.1:1"}, DialTimeout: time.Second,
		Cert: filepath.Join(t.TempDir(), "nope.crt"), Key: filepath.Join(t.TempDir(), "nope.key")})
	require.ErrorIs(t, err, ErrTLSConfig)
	require.True(t, strings.HasPrefix(err.Error(), "TLS configuration: "), err.Error())
}

func TestDialCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Dial(ctx, Config{Endpoints: []string{nettest.ClosedAddr(t)}, DialTimeout: time.Second})
	require.ErrorIs(t, err, context.Canceled)
}

func TestExplainRequestError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want string // "" : not an answer of etcd
	}{
		{"wrong password", rpctypes.ErrGRPCAuthFailed, "etcd authentication failed for user bob: wrong name or password"},
		{"no user", rpctypes.ErrGRPCUserEmpty, "etcd requires a user"},
		{"permission", rpctypes.ErrGRPCPermissionDenied, "permission denied for user bob"},
		{"deadline", context.DeadlineExceeded, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := explainRequestError(fmt.Errorf("request: %w", tc.err), "bob")
			if tc.want == "" {
				require.NoError(t, got)
				return
			}
			require.ErrorIs(t, got, ErrAuth)
			require.ErrorContains(t, got, tc.want)
		})
	}
}

func TestUnreachableErrorMatches(t *testing.T) {
	t.Parallel()
	err := error(&unreachableError{err: errors.New("connection refused")})
	require.ErrorIs(t, err, ErrUnreachable)
	require.NotErrorIs(t, err, ErrTLS)
}

func TestUseTLS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ep, host string
		tls, cfg bool
	}{
		{"https://127.0.0.1:2379", "127.0.0.1:2379", true, false},
		{"http://127.0.0.1:2379", "127.0.0.1:2379", false, true},
		{"127.0.0.1:2379", "127.0.0.1:2379", false, false},
		{"127.0.0.1:2379", "127.0.0.1:2379", true, true},
	} {
		var cfg = tlsConfigIf(tc.cfg)
		host, got := useTLS(tc.ep, cfg)
		require.Equal(t, tc.host, host, tc.ep)
		require.Equal(t, tc.tls, got, "%s with TLS configured: %v", tc.ep, tc.cfg)
	}
}

func TestCheckEndpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ ep, want string }{
		{"127.0.0.1:2379", ""},
		{"http://127.0.0.1:2379", ""},
		{"https://etcd.example:2379/", ""},
		{"unix:///tmp/etcd.sock", ""},
		{"not a url", "not host:port"},
		{"ftp://127.0.0.1:2379", `unknown scheme "ftp"`},
		{"http://127.0.0.1:2379/v3", "a path is not allowed"},
		{"http://127.0.0.1:99999", `bad port "99999" (1-65535)`},
		{"127.0.0.1:0", `bad port "0"`},
		{"a/b:1", `bad host "a/b"`},
	} {
		err := CheckEndpoint(tc.ep)
		if tc.want == "" {
			require.NoError(t, err, tc.ep)
			continue
		}
		require.ErrorContains(t, err, tc.want, tc.ep)
	}
}

func TestCheckTLSFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600))
	require.NoError(t, CheckTLSFiles("", "", ""))
	require.ErrorContains(t, CheckTLSFiles(notPEM, "", ""), "invalid --cacert "+notPEM+": no PEM certificate")
	require.ErrorContains(t, CheckTLSFiles(filepath.Join(dir, "nope.pem"), "", ""), "invalid --cacert: ")
	require.ErrorContains(t, CheckTLSFiles("", notPEM, notPEM), "invalid --cert/--key "+notPEM+", "+notPEM)
}

func TestReadPasswordLeavesTheRest(t *testing.T) {
	t.Parallel()
	r := strings.NewReader("s3cret\r\nfor the child\n")
	pass, err := ReadPassword(r)
	require.NoError(t, err)
	require.Equal(t, "s3cret", pass)
	rest := make([]byte, 64)
	n, _ := r.Read(rest)
	require.Equal(t, "for the child\n", string(rest[:n]), "nothing after the line is consumed")

	_, err = ReadPassword(strings.NewReader("\n"))
	require.ErrorContains(t, err, "empty password")
	_, err = ReadPassword(nil)
	require.ErrorContains(t, err, "no standard input")
	pass, err = ReadPassword(strings.NewReader("last"))
	require.NoError(t, err)
	require.Equal(t, "last", pass, "a line without newline at EOF")
}

func tlsConfigIf(on bool) *tls.Config {
	if on {
		return &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return nil
}

func TestCheckUser(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		user  string
		stdin bool
		want  string
	}{
		{"", false, ""},
		{"root:s3cret", false, ""},
		{"root", true, ""},
		{"", true, "--password-stdin needs --user NAME"},
		{":pw", false, "empty user name"},
		{"root:pw", true, "give the name only"},
		{"root", false, "want NAME:PASSWORD, or NAME with --password-stdin"},
		{"root:", false, "empty password (etcd would not authenticate as root)"},
	} {
		err := CheckUser(tc.user, tc.stdin)
		if tc.want == "" {
			require.NoError(t, err, "%q stdin=%v", tc.user, tc.stdin)
			continue
		}
		require.ErrorContains(t, err, tc.want, "%q stdin=%v", tc.user, tc.stdin)
	}
}
