package etcddial

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// CheckEndpoint says why etcd's client could never dial ep, or nil: ep must
// be host:port, or a URL with scheme http, https, unix or unixs. The error
// is the reason alone ("unknown scheme \"ftp\""), for the caller to put
// beside the flag.
func CheckEndpoint(ep string) error {
	host := ep
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil {
			return errors.New("not a URL")
		}
		switch u.Scheme {
		case "http", "https":
		case "unix", "unixs":
			return nil // a socket path, not host:port
		default:
			return fmt.Errorf("unknown scheme %q", u.Scheme)
		}
		if u.Path != "" && u.Path != "/" {
			return errors.New("a path is not allowed")
		}
		host = u.Host
	}
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		return errors.New("not host:port")
	}
	if strings.ContainsAny(h, " \t/?#") {
		return fmt.Errorf("bad host %q", h)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("bad port %q (1-65535)", port)
	}
	return nil
}

// CheckTLSFiles reports, before anything is dialed, a --cacert that holds no
// PEM certificate, a --cert/--key pair that does not load, and a --cert
// whose extended key usages leave out clientAuth (ErrCertUsage); the error
// names the flag and the file.
func CheckTLSFiles(caFile, certFile, keyFile string) error {
	if caFile != "" {
		data, err := os.ReadFile(caFile)
		if err != nil {
			return fmt.Errorf("invalid --cacert: %v", err)
		}
		if err := checkPEMCerts(data); err != nil {
			return fmt.Errorf("invalid --cacert %s: %v", caFile, err)
		}
	}
	return checkClientCert(certFile, keyFile)
}

// checkClientCert loads the --cert/--key pair, if any, and checks that the
// certificate may authenticate a client. etcd (Go's crypto/tls) verifies a
// client certificate for clientAuth: one issued for serverAuth alone fails
// the handshake with "bad certificate", which does not say why. A
// certificate without the extension, or with anyExtendedKeyUsage, may.
func checkClientCert(certFile, keyFile string) error {
	if certFile == "" {
		return nil
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("invalid --cert/--key %s, %s: %v", certFile, keyFile, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return fmt.Errorf("invalid --cert %s: %v", certFile, err)
		}
	}
	if len(leaf.ExtKeyUsage) == 0 && len(leaf.UnknownExtKeyUsage) == 0 {
		return nil
	}
	var names []string
	for _, u := range leaf.ExtKeyUsage {
		if u == x509.ExtKeyUsageClientAuth || u == x509.ExtKeyUsageAny {
			return nil
		}
		names = append(names, extKeyUsageName(u))
	}
	for _, oid := range leaf.UnknownExtKeyUsage {
		names = append(names, oid.String())
	}
	return fmt.Errorf("invalid --cert %s: %w: its extended key usage is %s, without clientAuth, so etcd would refuse it "+
		"in the TLS handshake; issue it with clientAuth (extendedKeyUsage = clientAuth; a certificate etcd also serves "+
		"with needs serverAuth, clientAuth)", certFile, ErrCertUsage, strings.Join(names, ", "))
}

// extKeyUsageName names u as openssl's extendedKeyUsage does.
func extKeyUsageName(u x509.ExtKeyUsage) string {
	switch u {
	case x509.ExtKeyUsageServerAuth:
		return "serverAuth"
	case x509.ExtKeyUsageCodeSigning:
		return "codeSigning"
	case x509.ExtKeyUsageEmailProtection:
		return "emailProtection"
	case x509.ExtKeyUsageTimeStamping:
		return "timeStamping"
	case x509.ExtKeyUsageOCSPSigning:
		return "OCSPSigning"
	}
	return fmt.Sprintf("usage %d", u)
}

// checkPEMCerts checks that data holds at least one PEM certificate and
// that every certificate in it parses.
func checkPEMCerts(data []byte) error {
	n := 0
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("certificate %d: %v", n+1, err)
		}
		n++
	}
	if n == 0 {
		return errors.New("no PEM certificate in the file (want a CA bundle: -----BEGIN CERTIFICATE-----)")
	}
	return nil
}

// ReadPassword reads one line from r (--password-stdin), byte by byte so
// that nothing after it is consumed (a child may read the rest). An empty
// line is an error: etcd's client would skip authentication.
func ReadPassword(r io.Reader) (string, error) {
	if r == nil {
		return "", errors.New("no standard input")
	}
	var line []byte
	b := make([]byte, 1)
	for {
		n, err := r.Read(b)
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			line = append(line, b[0])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	pass := strings.TrimSuffix(string(line), "\r")
	if pass == "" {
		return "", errors.New("empty password on standard input")
	}
	return pass, nil
}

// CheckUser checks --user (NAME:PASSWORD, or NAME with --password-stdin)
// and --password-stdin; the error names the flags. An empty password is never
// meant: etcd's client would skip authentication and etcd would take the
// user from the client certificate instead, if any.
func CheckUser(user string, stdin bool) error {
	name, pass, hasPass := strings.Cut(user, ":")
	switch {
	case user == "" && stdin:
		return errors.New("--password-stdin needs --user NAME")
	case user == "":
		return nil
	case name == "":
		return fmt.Errorf("invalid --user %q: empty user name", user)
	case stdin && hasPass:
		return fmt.Errorf("invalid --user %q with --password-stdin: give the name only", user)
	case stdin:
		return nil
	case !hasPass:
		return fmt.Errorf("invalid --user %q: want NAME:PASSWORD, or NAME with --password-stdin", user)
	case pass == "":
		return fmt.Errorf("invalid --user %q: empty password (etcd would not authenticate as %s); "+
			"give NAME:PASSWORD, NAME with --password-stdin, or no --user to be the client certificate's common name", user, name)
	}
	return nil
}
