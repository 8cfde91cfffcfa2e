package fencing

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateScopeRefusesNonUTF8(t *testing.T) {
	for _, s := range []string{"jobs/\xff", "\xc3\x28", "a\xed\xa0\x80"} {
		err := ValidateScope(s)
		require.True(t, errors.Is(err, ErrInvalidScope), "%q: %v", s, err)
		require.Contains(t, err.Error(), "UTF-8")
	}
	require.NoError(t, ValidateScope("jobs/résumé"))
}

// Issue 25 item 16: a duplicate Fencing-Scope header was accepted (the
// first one won) while a duplicate token was refused; a non-UTF-8 scope
// was stored, and after a restart two such scopes shared one floor (JSON
// replaces invalid bytes); a non-UTF-8 value did not read back as written.
func TestResourceRefusesAmbiguousFencingHeadersAndBytes(t *testing.T) {
	r, err := NewResource(ResourceConfig{DataDir: t.TempDir()})
	require.NoError(t, err)
	defer r.Close()
	put := func(scopes []string, body string) (int, string) {
		req := httptest.NewRequest(http.MethodPut, "/v1/kv/k", strings.NewReader(body))
		req.Header.Set(HeaderToken, "7")
		for _, s := range scopes {
			req.Header.Add(HeaderScope, s)
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	code, body := put([]string{"jobs/a", "jobs/b"}, "v")
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "more than one Fencing-Scope header")

	code, body = put([]string{"jobs/\xff"}, "v")
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "UTF-8")

	code, body = put([]string{"jobs/a"}, "caf\xe9")
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "UTF-8")

	fence := httptest.NewRequest(http.MethodPost, "/v1/fence", nil)
	fence.Header.Set(HeaderToken, "9")
	fence.Header.Add(HeaderScope, "jobs/a")
	fence.Header.Add(HeaderScope, "jobs/a")
	w := httptest.NewRecorder()
	r.ServeHTTP(w, fence)
	require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())

	require.Empty(t, r.guard.Floors(), "nothing refused was admitted")
	code, body = put([]string{"jobs/a"}, "ok")
	require.Equal(t, http.StatusOK, code, body)
}
