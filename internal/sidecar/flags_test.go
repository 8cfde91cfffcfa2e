package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The flag checks coordctl sidecar runs before ready: each refusal is a
// usage error naming the flag; a command that cannot start is ErrCommand.
func TestFlagsCheck(t *testing.T) {
	ok := Flags{Election: "svc", ID: "a", Listen: "127.0.0.1:0", TTL: time.Second, KillGrace: time.Second}
	require.NoError(t, ok.Check())
	notDir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notDir, nil, 0o600))
	for _, tc := range []struct {
		name string
		edit func(*Flags)
		want string
	}{
		{"ttl first", func(f *Flags) { f.TTL, f.Election = time.Millisecond, "" }, "invalid --ttl 1ms: session: TTL out of bounds: must be at least 1s"},
		{"no election", func(f *Flags) { f.Election = " " }, "--election is required"},
		{"no id", func(f *Flags) { f.ID = "" }, "--id is required"},
		{"kill grace", func(f *Flags) { f.KillGrace = 0 }, "invalid --kill-grace 0s: must be positive"},
		{"listen without port", func(f *Flags) { f.Listen = "127.0.0.1" }, `invalid --listen "127.0.0.1"`},
		{"bad port", func(f *Flags) { f.Listen = "127.0.0.1:99999" }, `invalid --listen "127.0.0.1:99999": bad port "99999"`},
		{"token file in no directory", func(f *Flags) { f.TokenFile = filepath.Join(notDir, "token") }, "invalid --token-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := ok
			tc.edit(&fl)
			err := fl.Check()
			require.ErrorIs(t, err, ErrUsage)
			require.ErrorContains(t, err, tc.want)
		})
	}
	fl := ok
	fl.Command = []string{filepath.Join(t.TempDir(), "missing")}
	err := fl.Check()
	require.ErrorIs(t, err, ErrCommand)
	require.False(t, errors.Is(err, ErrUsage))
}

func TestFlagsGraceWarning(t *testing.T) {
	fl := Flags{TTL: 10 * time.Second, KillGrace: 5 * time.Second}
	require.Empty(t, fl.GraceWarning(), "no command, nothing to kill")
	fl.Command = []string{"true"}
	require.NotEmpty(t, fl.GraceWarning(), "5s is longer than a tenth of 10s")
	fl.KillGrace = 100 * time.Millisecond
	require.Empty(t, fl.GraceWarning())
}

func TestFlagsAPITokenAndConfig(t *testing.T) {
	_, err := Flags{Listen: ":4040"}.APIToken()
	require.ErrorIs(t, err, ErrUsage)
	require.ErrorContains(t, err, "--listen :4040 is not a loopback address: it needs --api-token-file FILE")
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("0123456789abcdef0123\n"), 0o600))
	tok, err := Flags{Listen: ":4040", APITokenFile: file}.APIToken()
	require.NoError(t, err)
	require.Equal(t, "0123456789abcdef0123", tok)
	tok, err = Flags{Listen: "127.0.0.1:4040"}.APIToken()
	require.NoError(t, err)
	require.Empty(t, tok, "loopback needs no token")

	cfg := Flags{Election: "svc", ID: "a", Prefix: "p/", TTL: 3 * time.Second, KillGrace: time.Second, Command: []string{}}.Config("tok")
	require.Nil(t, cfg.Command, "an empty command is none")
	require.Equal(t, Config{Name: "svc", ID: "a", Prefix: "p/", TTL: 3 * time.Second, KillGrace: time.Second, APIToken: "tok"}, cfg)
}

// The resign client: 200 resigned, 409 not (nothing to do), anything else an
// error naming the endpoint; the request carries JSON and the token.
func TestResignClient(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/resign" || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" ||
			r.Header.Get("Authorization") != "Bearer 0123456789abcdef0123" {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		w.WriteHeader(status)
		switch status {
		case http.StatusOK:
			_ = json.NewEncoder(w).Encode(View{ID: "a"})
		case http.StatusConflict:
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "sidecar: not the leader", "state": View{ID: "a"}})
		default:
			_, _ = w.Write([]byte(`{"error":"wrong token"}`))
		}
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("0123456789abcdef0123"), 0o600))
	req := ResignRequest{URL: srv.URL + "/", APITokenFile: file, Timeout: 5 * time.Second}
	ctx := context.Background()

	res, err := Resign(ctx, req)
	require.NoError(t, err)
	require.Equal(t, ResignResult{Resigned: true, View: View{ID: "a"}}, res)
	require.Equal(t, "resigned id=a", res.String())

	status = http.StatusConflict
	res, err = Resign(ctx, req)
	require.NoError(t, err)
	require.False(t, res.Resigned)
	require.Equal(t, "not resigned id=a: sidecar: not the leader", res.String())

	status = http.StatusUnauthorized
	_, err = Resign(ctx, req)
	require.ErrorContains(t, err, "sidecar resign: "+srv.URL+"/v1/resign answered 401 Unauthorized: wrong token")

	for _, bad := range []ResignRequest{
		{URL: "ftp://x", Timeout: time.Second},
		{URL: srv.URL, Timeout: 0},
		{URL: srv.URL, Timeout: time.Second, APITokenFile: filepath.Join(t.TempDir(), "none")},
	} {
		require.ErrorIs(t, bad.Validate(), ErrUsage, "%+v", bad)
	}
}
