package httpguard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/httpguard/guardtest"
)

func TestLoopbackAndCheckListen(t *testing.T) {
	for _, h := range []string{"localhost", "127.0.0.1", "127.9.9.9", "::1", "[::1]"} {
		require.True(t, Loopback(h), h)
	}
	for _, h := range []string{"", "0.0.0.0", "::", "10.0.0.1", "evil.example", "localhost.evil.example"} {
		require.False(t, Loopback(h), h)
	}
	require.NoError(t, CheckListen("127.0.0.1:4040", false))
	require.NoError(t, CheckListen("[::1]:0", false))
	require.NoError(t, CheckListen(":4040", true))
	for _, a := range []string{":4040", "0.0.0.0:4040", "10.1.2.3:80"} {
		require.True(t, errors.Is(CheckListen(a, false), ErrTokenRequired), a)
	}
	require.Error(t, CheckListen("nonsense", true))
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
		{"token in the header", Guard{Secret: NewSecret("s3cret")}, req("10.0.0.5:4040", "Bearer s3cret", ""), 0},
		{"token in the query", Guard{Secret: NewSecret("s3cret")}, req("10.0.0.5:4040", "", "?token=s3cret"), 0},
		{"wrong token", Guard{Secret: NewSecret("s3cret")}, req("127.0.0.1:4040", "Bearer nope", ""), http.StatusUnauthorized},
		{"no token though loopback", Guard{Secret: NewSecret("s3cret")}, req("127.0.0.1:4040", "", ""), http.StatusUnauthorized},
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

// A token file rotated as a Kubernetes Secret volume rotates it (the path
// is a symlink through ..data, swapped to a new directory) or rewritten in
// place: the new token is required at once, the previous one accepted for
// RotationGrace, and a file that cannot be used keeps the last token.
func TestSecretFollowsTheFile(t *testing.T) {
	vol := guardtest.NewSecretVolume(t, "first-token")
	path := vol.Path()
	var notes []string
	s, err := ReadSecret(path, func(m string) { notes = append(notes, m) })
	require.NoError(t, err)
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	require.True(t, s.Required())
	require.True(t, s.Accepts("first-token"))
	require.False(t, s.Accepts("second-token"))
	require.Empty(t, notes)

	vol.Rotate(t, "second-token")
	require.True(t, s.Accepts("second-token"), "the new token is required at once")
	require.True(t, s.Accepts("first-token"), "the previous one within the grace")
	require.Len(t, notes, 1)
	require.Contains(t, notes[0], "holds a new token")
	require.NotContains(t, notes[0], "second-token", "a note never shows a token")
	now = now.Add(RotationGrace)
	require.False(t, s.Accepts("first-token"), "not after the grace")
	require.True(t, s.Accepts("second-token"))

	// Rewritten in place, same size: the modification time tells.
	target, err := filepath.EvalSymlinks(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(target, []byte("third-tokenX\n"), 0o600))
	require.NoError(t, os.Chtimes(target, time.Now().Add(time.Second), time.Now().Add(time.Second)))
	require.True(t, s.Accepts("third-tokenX"))
	require.True(t, s.Accepts("second-token"))
	require.False(t, s.Accepts("first-token"))

	// Emptied, then removed: the last token stays in force, told once.
	require.NoError(t, os.WriteFile(target, []byte("\n"), 0o600))
	require.True(t, s.Accepts("third-tokenX"))
	require.NoError(t, os.Remove(path))
	require.True(t, s.Accepts("third-tokenX"))
	require.False(t, s.Accepts(""))
	require.Len(t, notes, 3)
	require.Contains(t, notes[2], "cannot be used")
	require.NotContains(t, notes[2], "third-tokenX")

	// Back: the new token, and the one in force until then within the grace.
	require.NoError(t, os.Symlink("..data/token", path))
	vol.Rotate(t, "fourth-token")
	require.True(t, s.Accepts("fourth-token"))
	require.True(t, s.Accepts("third-tokenX"))
	require.Len(t, notes, 4)
}

func TestSecretFixedAndNone(t *testing.T) {
	require.False(t, NewSecret("").Required())
	var none *Secret
	require.False(t, none.Required())
	s := NewSecret("abc")
	require.True(t, s.Required())
	require.True(t, s.Accepts("abc"))
	require.False(t, s.Accepts("ab"))
	require.False(t, s.Accepts(""))
	_, err := ReadSecret(filepath.Join(t.TempDir(), "missing"), nil)
	require.Error(t, err)
}
