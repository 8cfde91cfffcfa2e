package httpguard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoopbackAndCheckListen(t *testing.T) {
	for _, h := range []string{"localhost", "127.0.0.1", "127.9.9.9", "::1", "[::1]"} {
		require.True(t, Loopback(h), h)
	}
	for _, h := range []string{"", "0.0.0.0", "::", "10.0.0.1", "evil.example", "localhost.evil.example"} {
		require.False(t, Loopback(h), h)
	}
	require.NoError(t, CheckListen("127.0.0.1:4040", ""))
	require.NoError(t, CheckListen("[::1]:0", ""))
	require.NoError(t, CheckListen(":4040", "tok"))
	for _, a := range []string{":4040", "0.0.0.0:4040", "10.1.2.3:80"} {
		require.True(t, errors.Is(CheckListen(a, ""), ErrTokenRequired), a)
	}
	require.Error(t, CheckListen("nonsense", "tok"))
}

func TestGuardCheck(t *testing.T) {
	req := func(host, auth, query string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "http://"+host+"/x"+query, nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		return r
	}
	tests := []struct {
		name string
		g    Guard
		r    *http.Request
		want int
	}{
		{"loopback host, no token configured", Guard{}, req("127.0.0.1:4040", "", ""), 0},
		{"localhost", Guard{}, req("localhost:4040", "", ""), 0},
		{"a rebound DNS name", Guard{}, req("evil.example:4040", "", ""), http.StatusForbidden},
		{"token in the header", Guard{Token: "s3cret"}, req("10.0.0.5:4040", "Bearer s3cret", ""), 0},
		{"token in the query", Guard{Token: "s3cret"}, req("10.0.0.5:4040", "", "?token=s3cret"), 0},
		{"wrong token", Guard{Token: "s3cret"}, req("127.0.0.1:4040", "Bearer nope", ""), http.StatusUnauthorized},
		{"no token though loopback", Guard{Token: "s3cret"}, req("127.0.0.1:4040", "", ""), http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg := tt.g.Check(tt.r)
			require.Equal(t, tt.want, code, msg)
		})
	}
}

func TestJSONBody(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                  true,
		"application/json; charset=utf-8":   true,
		"Application/JSON":                  true,
		"":                                  false,
		"text/plain":                        false,
		"application/x-www-form-urlencoded": false,
		"multipart/form-data; boundary=x":   false,
		"application/jsonp":                 false,
	} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		require.Equal(t, want, JSONBody(r), ct)
	}
}

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tok")
	require.NoError(t, os.WriteFile(p, []byte("  abc\n"), 0o600))
	tok, err := ReadTokenFile(p)
	require.NoError(t, err)
	require.Equal(t, "abc", tok)
	require.NoError(t, os.WriteFile(p, []byte("\n \n"), 0o600))
	_, err = ReadTokenFile(p)
	require.True(t, errors.Is(err, ErrEmptyToken), "%v", err)
	_, err = ReadTokenFile(filepath.Join(dir, "missing"))
	require.Error(t, err)
}
