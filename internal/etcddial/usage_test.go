package etcddial

import (
	"context"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

func TestClientCertificateKeyUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := etcdtest.NewCA(t, dir, "usage-ca")
	tests := []struct {
		name  string
		usage []x509.ExtKeyUsage
		bad   string // the usage the error names; "" when accepted
	}{
		{name: "clientAuth", usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		{name: "serverAuth and clientAuth (a shared certificate)", usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
		{name: "no extension allows every usage"},
		{name: "anyExtendedKeyUsage", usage: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}},
		{name: "serverAuth alone", usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, bad: "serverAuth"},
		{name: "codeSigning", usage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, bad: "codeSigning"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert, key := ca.IssueWithUsage(t, dir, "c"+string(rune('a'+i)), false, tt.usage...)
			err := CheckTLSFiles(ca.File, cert, key)
			if tt.bad == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrCertUsage)
			require.ErrorContains(t, err, "invalid --cert "+cert)
			require.ErrorContains(t, err, "extended key usage is "+tt.bad+", without clientAuth")

			// Dial refuses it before dialing: nothing listens there.
			_, err = Dial(context.Background(), Config{Endpoints: []string{"127.0.0.1:1"}, DialTimeout: time.Second,
				CACert: ca.File, Cert: cert, Key: key})
			require.ErrorIs(t, err, ErrTLSConfig)
			require.ErrorIs(t, err, ErrCertUsage)
		})
	}
}

// What the check saves a user from: a real etcd that requires client
// certificates refuses one issued for serverAuth alone, in the handshake,
// and accepts the same CA's clientAuth certificate.
func TestEtcdRefusesAServerOnlyClientCertificate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := etcdtest.NewCA(t, dir, "refuse-ca")
	srv := startTLSEtcd(t, dir, ca)

	put := func(cert, key string) error {
		cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), TLS: etcdtest.ClientTLS(t, ca.File, cert, key),
			DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		require.NoError(t, err)
		defer cli.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err = cli.Put(ctx, "k", "v")
		return err
	}
	goodCert, goodKey := ca.Issue(t, dir, "client", false)
	require.NoError(t, put(goodCert, goodKey))
	badCert, badKey := ca.IssueWithUsage(t, dir, "server-only", false, x509.ExtKeyUsageServerAuth)
	err := put(badCert, badKey)
	require.Error(t, err, "etcd accepted a client certificate without clientAuth")
	require.False(t, errors.Is(err, ErrCertUsage), "the refusal came from etcd, not from this package")
	require.ErrorIs(t, CheckTLSFiles(ca.File, badCert, badKey), ErrCertUsage, "and CheckTLSFiles says so before dialing")
}
