package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

// testCA is a certificate authority made in the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // PEM of the CA certificate
}

func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	file := filepath.Join(dir, name+".pem")
	writePEM(t, file, "CERTIFICATE", der)
	return &testCA{cert: cert, key: key, file: file}
}

// issue writes a certificate for cn signed by ca, for a server (with
// 127.0.0.1 as its address) or a client, and returns the cert and key files.
func (ca *testCA) issue(t *testing.T, dir, cn string, server bool) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile = filepath.Join(dir, cn+"-"+ca.cert.Subject.CommonName+".crt")
	keyFile = filepath.Join(dir, cn+"-"+ca.cert.Subject.CommonName+".key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func writePEM(t *testing.T, file, typ string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

// TestTLSAndAuthErrorsSayWhy runs a real etcd that serves clients over TLS
// only, requires client certificates and has auth enabled, and checks that
// every way of getting the connection wrong is reported with its cause,
// and that "unreachable" is kept for an endpoint where nothing answers.
func TestTLSAndAuthErrorsSayWhy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := newTestCA(t, dir, "etcd-ca")
	other := newTestCA(t, dir, "other-ca")
	srvCert, srvKey := ca.issue(t, dir, "server", true)
	rootCert, rootKey := ca.issue(t, dir, "root", false)
	strangerCert, strangerKey := other.issue(t, dir, "root", false)

	srv, err := etcdembed.Start(context.Background(), etcdembed.Config{
		DataDir:       filepath.Join(dir, "etcd"),
		UnsafeNoFsync: true,
		ClientTLS: &etcdembed.ClientTLS{CertFile: srvCert, KeyFile: srvKey,
			TrustedCAFile: ca.file, ClientCertAuth: true},
	})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	ep := srv.Endpoints()[0]
	require.True(t, strings.HasPrefix(ep, "https://"), ep)
	hostport := strings.TrimPrefix(ep, "https://")

	// Create root with a password and enable auth, as an operator would.
	tlsCfg := clientTLS(t, ca.file, rootCert, rootKey)
	admin, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, TLS: tlsCfg, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
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

	dead := freeAddr(t)
	// etcd checks a password with bcrypt, slow under -race on a loaded
	// machine: the cases that authenticate get time; the others fail
	// whatever the timeout.
	const slow = "60s"
	plain := etcdtest.Start(t)
	good := []string{"--cacert", ca.file, "--cert", rootCert, "--key", rootKey}
	cases := []struct {
		name     string
		args     []string
		code     int
		want     string
		notWants []string
	}{
		{"right credentials", append([]string{"--endpoints", ep, "--user", "root:s3cret", "--dial-timeout", slow}, good...), exitNotAcquired, "not claimed", nil},
		{"wrong CA", []string{"--endpoints", ep, "--cacert", other.file, "--cert", rootCert, "--key", rootKey},
			exitError, "x509: certificate signed by unknown authority", []string{"unreachable", "deadline"}},
		{"client cert from another CA", []string{"--endpoints", ep, "--cacert", ca.file, "--cert", strangerCert, "--key", strangerKey},
			exitError, "rejected the client certificate", []string{"unreachable", "deadline"}},
		{"no client cert", []string{"--endpoints", ep, "--cacert", ca.file},
			exitError, "requires a client certificate", []string{"unreachable", "deadline"}},
		{"plain http to the TLS port", []string{"--endpoints", "http://" + hostport},
			exitError, "the endpoint speaks TLS; use https:// and --cacert", []string{"unreachable", "deadline"}},
		{"host:port without TLS flags", []string{"--endpoints", hostport},
			exitError, "the endpoint speaks TLS; use https:// and --cacert", []string{"unreachable", "deadline"}},
		{"wrong password", append([]string{"--endpoints", ep, "--user", "root:wrong", "--dial-timeout", slow}, good...),
			exitError, "authentication failed for user root", []string{"unreachable", "deadline"}},
		{"TLS to a plain-text etcd", []string{"--endpoints", strings.Replace(plain.Endpoints()[0], "http://", "https://", 1), "--cacert", ca.file},
			exitError, "does not speak TLS", []string{"unreachable", "deadline"}},
		{"nothing listens", append([]string{"--endpoints", "https://" + dead}, good...),
			exitError, "etcd unreachable at https://" + dead, []string{"deadline"}},
	}
	t.Run("password from stdin", func(t *testing.T) {
		args := append([]string{"claim", "x", "--owner", "me", "--endpoints", ep, "--user", "root", "--password-stdin", "--dial-timeout", slow}, good...)
		res := runWithStdin("s3cret\n", args...)
		require.Equal(t, exitOK, res.Code, res.Stderr)
		res = runWithStdin("wrong\n", args...)
		require.Equal(t, exitError, res.Code, res.Stderr)
		require.Contains(t, res.Stderr, "authentication failed for user root")
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Most cases wait out the 3s dial timeout.
			t.Parallel()
			args := append([]string{"claim", "get", "nobody", "--dial-timeout", "3s"}, tc.args...) // a later --dial-timeout wins
			res := runInProcess(context.Background(), nil, args...)
			t.Log(strings.SplitN(res.Stderr, "\n", 2)[0])
			require.Equal(t, tc.code, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
			for _, nw := range tc.notWants {
				require.NotContains(t, res.Stderr, nw)
			}
		})
	}
}

func clientTLS(t *testing.T, caFile, certFile, keyFile string) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	data, err := os.ReadFile(caFile)
	require.NoError(t, err)
	require.True(t, pool.AppendCertsFromPEM(data))
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	require.NoError(t, err)
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}
