package etcdtest

import (
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
	"testing"
	"time"
)

// CA is a certificate authority made in a test, for etcds that serve TLS
// (etcdembed.Config.ClientTLS) and the clients that dial them.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// File is the PEM file of the CA certificate, in dir.
	File string
}

// NewCA makes a CA named name and writes its certificate to dir.
func NewCA(t testing.TB, dir, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
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
	must(t, err)
	cert, err := x509.ParseCertificate(der)
	must(t, err)
	file := filepath.Join(dir, name+".pem")
	writePEM(t, file, "CERTIFICATE", der)
	return &CA{cert: cert, key: key, File: file}
}

// Issue writes a certificate for cn signed by ca, for a server (with
// 127.0.0.1 and localhost as its names) or a client, and returns the cert
// and key files.
func (ca *CA) Issue(t testing.TB, dir, cn string, server bool) (certFile, keyFile string) {
	t.Helper()
	if server {
		return ca.IssueWithUsage(t, dir, cn, true, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	}
	return ca.IssueWithUsage(t, dir, cn, false, x509.ExtKeyUsageClientAuth)
}

// IssueWithUsage is Issue with the certificate's extended key usages
// given (none: the extension is left out, which allows every usage).
func (ca *CA) IssueWithUsage(t testing.TB, dir, cn string, server bool, usage ...x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
	}
	if server {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	must(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	must(t, err)
	certFile = filepath.Join(dir, cn+"-"+ca.cert.Subject.CommonName+".crt")
	keyFile = filepath.Join(dir, cn+"-"+ca.cert.Subject.CommonName+".key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	return certFile, keyFile
}

// ClientTLS is the client configuration that trusts caFile and presents
// certFile and keyFile.
func ClientTLS(t testing.TB, caFile, certFile, keyFile string) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	data, err := os.ReadFile(caFile)
	must(t, err)
	if !pool.AppendCertsFromPEM(data) {
		t.Fatalf("etcdtest: no certificate in %s", caFile)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	must(t, err)
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}

func writePEM(t testing.TB, file, typ string, der []byte) {
	t.Helper()
	must(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
