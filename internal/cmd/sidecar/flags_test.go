package sidecarcmd

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil/hold"
	"github.com/coordkit/coordkit/internal/httpguard"
	"github.com/coordkit/coordkit/internal/sidecar"
)

// The flag checks coordctl sidecar runs before ready: each refusal is a
// usage error naming the flag; a command that cannot start is ErrCommand.
func TestSidecarOptionsCheck(t *testing.T) {
	ok := sidecarOptions{Election: "svc", ID: "a", Listen: "127.0.0.1:0", TTL: time.Second, KillGrace: time.Second}
	require.NoError(t, ok.Check())
	notDir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notDir, nil, 0o600))
	for _, tc := range []struct {
		name string
		edit func(*sidecarOptions)
		want string
	}{
		{"ttl first", func(f *sidecarOptions) { f.TTL, f.Election = time.Millisecond, "" }, "invalid --ttl 1ms: session: TTL out of bounds: must be at least 1s"},
		{"no election", func(f *sidecarOptions) { f.Election = " " }, "--election is required"},
		{"no id", func(f *sidecarOptions) { f.ID = "" }, "--id is required"},
		{"kill grace", func(f *sidecarOptions) { f.KillGrace = 0 }, "invalid --kill-grace 0s: must be positive"},
		{"listen without port", func(f *sidecarOptions) { f.Listen = "127.0.0.1" }, `invalid --listen "127.0.0.1"`},
		{"bad port", func(f *sidecarOptions) { f.Listen = "127.0.0.1:99999" }, `invalid --listen "127.0.0.1:99999": bad port "99999"`},
		{"token file in no directory", func(f *sidecarOptions) { f.TokenFile = filepath.Join(notDir, "token") }, "invalid --token-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := ok
			tc.edit(&fl)
			err := fl.Check()
			requireUsage(t, err)
			require.ErrorContains(t, err, tc.want)
		})
	}
	fl := ok
	fl.Command = []string{filepath.Join(t.TempDir(), "missing")}
	err := fl.Check()
	require.ErrorIs(t, err, sidecar.ErrCommand)
	var start *cmdutil.ChildStartError
	require.ErrorAs(t, err, &start, "exit 127, not a usage error")
}

func TestSidecarOptionsGraceWarning(t *testing.T) {
	fl := sidecarOptions{TTL: 10 * time.Second, KillGrace: 5 * time.Second}
	require.Empty(t, fl.GraceWarning(), "no command, nothing to kill")
	fl.Command = []string{"true"}
	require.NotEmpty(t, fl.GraceWarning(), "5s is longer than a tenth of 10s")
	fl.KillGrace = 100 * time.Millisecond
	require.Empty(t, fl.GraceWarning())
}

func TestSidecarOptionsAPITokenAndConfig(t *testing.T) {
	_, err := sidecarOptions{Listen: ":4040"}.APIToken(nil)
	requireUsage(t, err)
	require.ErrorContains(t, err, "--listen :4040 is not a loopback address: it needs --api-token-file FILE")
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("0123456789abcdef0123\n"), 0o600))
	tok, err := sidecarOptions{Listen: ":4040", APITokenFile: file}.APIToken(nil)
	require.NoError(t, err)
	require.True(t, tok.Accepts("0123456789abcdef0123"))
	require.False(t, tok.Accepts("0123456789abcdef012"))
	tok, err = sidecarOptions{Listen: "127.0.0.1:4040"}.APIToken(nil)
	require.NoError(t, err)
	require.False(t, tok.Required(), "loopback needs no token")

	secret := httpguard.NewSecret("tok")
	cfg := sidecarOptions{Election: "svc", ID: "a", Prefix: "p/", TTL: 3 * time.Second, KillGrace: time.Second, Command: []string{}}.config(secret)
	require.Nil(t, cfg.Command, "an empty command is none")
	require.Equal(t, sidecar.Config{Name: "svc", ID: "a", Prefix: "p/", TTL: 3 * time.Second, KillGrace: time.Second, APIToken: secret}, cfg)
}

// Configure checks the API token before the coordination flags and carries
// both into the Config.
func TestSidecarOptionsConfigure(t *testing.T) {
	fl := sidecarOptions{Election: "e", ID: "i", Listen: "127.0.0.1:0", Coord: hold.CoordFlags{Policy: "priority", Priority: 3}}
	cfg, err := fl.Configure(nil)
	require.NoError(t, err)
	require.Equal(t, sidecar.Coordination{Policy: election.PolicyPriority, Priority: 3}, cfg.Coordination)
	require.Equal(t, "e", cfg.Name)

	fl.Coord.Policy = "bogus"
	_, err = fl.Configure(nil)
	requireUsage(t, err)
	require.ErrorContains(t, err, "invalid --policy")

	fl.Listen = "0.0.0.0:4040"
	_, err = fl.Configure(nil)
	requireUsage(t, err)
	require.ErrorContains(t, err, "needs --api-token-file", "the token is checked first")
}

// sidecar resign's flags: --url, else $COORDCTL_SIDECAR_URL, else the
// default --listen; each bad flag a usage error naming it.
func TestSidecarResignRequest(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	r, err := sidecarResignOptions{Timeout: time.Second}.request(getenv)
	require.NoError(t, err)
	require.Equal(t, defaultURL, r.URL)
	env[envURL] = "http://10.0.0.1:4040"
	r, _ = sidecarResignOptions{Timeout: time.Second}.request(getenv)
	require.Equal(t, "http://10.0.0.1:4040", r.URL)
	r, _ = sidecarResignOptions{URL: "http://x:1", Timeout: time.Second}.request(getenv)
	require.Equal(t, "http://x:1", r.URL, "a URL given wins")

	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("0123456789abcdef0123\n"), 0o600))
	r, err = sidecarResignOptions{APITokenFile: file, Timeout: time.Second}.request(getenv)
	require.NoError(t, err)
	require.Equal(t, "0123456789abcdef0123", r.Token)
	r, err = sidecarResignOptions{Timeout: time.Second, To: "best", ToSet: true}.request(getenv)
	require.NoError(t, err)
	require.Equal(t, sidecar.ResignToBest, r.To)
	r, _ = sidecarResignOptions{Timeout: time.Second, To: "web-2", ToSet: true}.request(getenv)
	require.Equal(t, "web-2", r.To)
	for _, tc := range []struct {
		opts sidecarResignOptions
		want string
	}{
		{sidecarResignOptions{URL: "ftp://x", Timeout: time.Second}, `invalid --url "ftp://x"`},
		{sidecarResignOptions{Timeout: 0}, "invalid --timeout 0s"},
		{sidecarResignOptions{Timeout: time.Second, APITokenFile: filepath.Join(t.TempDir(), "none")}, "invalid --api-token-file"},
		{sidecarResignOptions{Timeout: time.Second, To: " ", ToSet: true}, `invalid --to " ": want a candidate's --id, or best`},
	} {
		_, err := tc.opts.request(getenv)
		requireUsage(t, err)
		require.ErrorContains(t, err, tc.want)
	}
}

func requireUsage(t *testing.T, err error) {
	t.Helper()
	var u *cmdutil.UsageError
	require.ErrorAs(t, err, &u, "a usage error (exit 2)")
}
