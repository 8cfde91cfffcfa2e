package httpguard

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"os"
	"strings"
)

// Errors of CheckListen and ReadTokenFile.
var (
	// ErrTokenRequired: a server on a non-loopback address has no token.
	ErrTokenRequired = errors.New("httpguard: a non-loopback address requires a token")
	// ErrEmptyToken: the token file holds only white space.
	ErrEmptyToken = errors.New("httpguard: the token file is empty")
)

// Loopback reports whether host (without a port) is "localhost" or a
// loopback IP address.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// CheckListen returns an error wrapping ErrTokenRequired when addr
// (host:port) is not a loopback address and no token is required
// (hasToken false). An empty host (":4040") listens on every interface, so
// it needs a token too.
func CheckListen(addr string, hasToken bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("httpguard: address %q: %w", addr, err)
	}
	if !Loopback(host) && !hasToken {
		return fmt.Errorf("%w: %s", ErrTokenRequired, addr)
	}
	return nil
}

// ReadTokenFile reads a token from path, without surrounding white space.
// It returns ErrEmptyToken for a file with nothing else in it.
func ReadTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("%w: %s", ErrEmptyToken, path)
	}
	return t, nil
}

// A Guard says who may call a server. The zero value admits only requests
// whose Host is a loopback host.
type Guard struct {
	// Secret, when it requires a token, is required on every guarded
	// request (nil: none).
	Secret *Secret
	// Name prefixes the messages of refusals ("labweb", "sidecar").
	Name string
}

// Check returns 0 and "" when r may proceed, else the HTTP status
// (401 for a missing or wrong token, 403 for a Host that is not loopback)
// and a message saying why.
func (g Guard) Check(r *http.Request) (int, string) {
	if g.Secret.Required() {
		got := r.URL.Query().Get("token")
		if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
			got = strings.TrimPrefix(h, "Bearer ")
		}
		if !g.Secret.Accepts(got) {
			return http.StatusUnauthorized, g.Name + ": missing or wrong token"
		}
		return 0, ""
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		host = h
	}
	if !Loopback(host) {
		return http.StatusForbidden, g.Name + ": host " + r.Host + " is not a loopback address"
	}
	return 0, ""
}

// Wrap returns next behind Check; refusals are written by fail.
func (g Guard) Wrap(next http.Handler, fail func(w http.ResponseWriter, status int, msg string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code, msg := g.Check(r); code != 0 {
			fail(w, code, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// JSONBody reports whether r says Content-Type: application/json (with
// any parameters), what a state-changing request must send.
func JSONBody(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}
