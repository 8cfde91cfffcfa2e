package root

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// Unknown subcommands of every group are usage errors (exit 2) that name
// the closest command, also when flags follow them; a group alone prints
// its help.
func TestUnknownSubcommandsAreUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		args    []string
		suggest string // "" when nothing is close
	}{
		{"root", []string{"nosuch"}, ""},
		{"root close", []string{"lokc", "x"}, "lock"},
		{"root with flags", []string{"lokc", "x", "--ttl", "5s"}, "lock"},
		{"resource", []string{"resource", "puut", "k", "v"}, "put"},
		{"resource with flags", []string{"resource", "puut", "k", "v", "--token", "5", "--scope", "s"}, "put"},
		{"check", []string{"check", "lock-safty"}, "lock-safety"},
		{"check with flags", []string{"check", "lock-safty", "--duration", "1s"}, "lock-safety"},
		{"scenario", []string{"scenario", "rn", "x"}, "run"},
		{"lamport", []string{"lamport", "trac"}, "trace"},
		{"bench", []string{"bench", "lokc"}, "lock"},
		{"claim subcommand flags", []string{"claim", "relase", "n"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runInProcess(context.Background(), nil, tc.args...)
			if tc.name == "claim subcommand flags" {
				// claim takes NAME itself: "relase" is a name, and --owner is missing.
				require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
				require.Contains(t, res.Stderr, "--owner")
				return
			}
			require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, "unknown command")
			require.NotContains(t, res.Stderr, "unknown flag")
			if tc.suggest != "" {
				require.Contains(t, res.Stderr, "did you mean "+tc.suggest)
			}
			require.Empty(t, res.Stdout)
		})
	}
	for _, group := range [][]string{{}, {"resource"}, {"check"}, {"scenario"}, {"lamport"}, {"bench"}} {
		res := runInProcess(context.Background(), nil, group...)
		require.Equal(t, cmdutil.ExitOK, res.Code, "%v: %s", group, res.Stderr)
		require.Contains(t, res.Stdout, "Available Commands:", "%v", group)
	}
}

// Flags whose values can never work are usage errors found before
// anything is dialed or created.
func TestBadFlagValuesAreUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600))
	dead := "127.0.0.1:1"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"lock ttl over etcd's maximum", []string{"lock", "x", "--ttl", "2562047h", "--endpoints", dead}, "maximum lease TTL"},
		{"elect ttl over etcd's maximum", []string{"elect", "x", "--ttl", "2562047h", "--endpoints", dead}, "maximum lease TTL"},
		{"claim ttl over etcd's maximum", []string{"claim", "x", "--owner", "o", "--ttl", "2562047h", "--endpoints", dead}, "maximum lease TTL"},
		{"sidecar ttl over etcd's maximum", []string{"sidecar", "--election", "e", "--id", "a", "--ttl", "2562047h", "--endpoints", dead}, "maximum lease TTL"},
		{"resource listen port", []string{"resource", "serve", "--listen", "127.0.0.1:99999", "--data-dir", filepath.Join(dir, "res")}, "bad port"},
		{"sidecar listen port", []string{"sidecar", "--election", "e", "--id", "a", "--listen", "127.0.0.1:99999", "--endpoints", dead}, "bad port"},
		{"etcd client url", []string{"etcd", "--data-dir", filepath.Join(dir, "etcd"), "--listen-client-urls", "127.0.0.1:2379"}, "want http://host:port"},
		{"etcd peer port", []string{"etcd", "--data-dir", filepath.Join(dir, "etcd"), "--listen-peer-urls", "http://127.0.0.1:99999"}, "bad port"},
		{"etcd control port", []string{"etcd", "--members", "3", "--data-dir", filepath.Join(dir, "etcd"), "--control", "127.0.0.1:99999"}, "bad port"},
		{"endpoint not a url", []string{"lock", "x", "--endpoints", "not a url"}, "invalid --endpoints"},
		{"endpoint bad scheme", []string{"lock", "x", "--endpoints", "ftp://127.0.0.1:2379"}, "unknown scheme"},
		{"endpoint bad port", []string{"claim", "get", "x", "--endpoints", "http://127.0.0.1:99999"}, "bad port"},
		{"empty password", []string{"lock", "x", "--user", "root:", "--endpoints", dead}, "empty password"},
		{"password-stdin without user", []string{"lock", "x", "--password-stdin", "--endpoints", dead}, "--password-stdin needs --user"},
		{"cacert not PEM", []string{"lock", "x", "--cacert", notPEM, "--endpoints", dead}, "no PEM certificate"},
		{"cacert missing", []string{"lock", "x", "--cacert", filepath.Join(dir, "nope.pem"), "--endpoints", dead}, "invalid --cacert"},
		{"cert not PEM", []string{"lock", "x", "--cert", notPEM, "--key", notPEM, "--endpoints", dead}, "invalid --cert/--key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runInProcess(context.Background(), nil, tc.args...)
			require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
			require.NotContains(t, res.Stderr, "unreachable")
		})
	}
	_, err := os.Stat(filepath.Join(dir, "res"))
	require.ErrorIs(t, err, os.ErrNotExist, "a usage error must not create the data dir")
}

// The etcd flags are on the commands that talk to etcd and nowhere else.
func TestEtcdFlagsOnlyOnEtcdCommands(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"resource", "get", "k", "--endpoints", "127.0.0.1:2379"},
		{"resource", "serve", "--cacert", "x"},
		{"lamport", "trace", "--user", "a:b"},
		{"lab", "--dial-timeout", "1s"},
		{"etcd", "--endpoints", "127.0.0.1:2379"},
	} {
		res := runInProcess(context.Background(), nil, args...)
		require.Equal(t, cmdutil.ExitUsage, res.Code, "%v: %s", args, res.Stderr)
		require.Contains(t, res.Stderr, "unknown flag", "%v", args)
	}
	for _, args := range [][]string{
		{"lock", "--help"}, {"lock", "status", "--help"}, {"sem", "--help"}, {"sem", "status", "--help"},
		{"elect", "--help"}, {"sidecar", "--help"}, {"claim", "--help"}, {"claim", "get", "--help"},
	} {
		res := runInProcess(context.Background(), nil, args...)
		require.Equal(t, cmdutil.ExitOK, res.Code)
		for _, fl := range []string{"--endpoints", "--dial-timeout", "--command-timeout", "--cacert", "--cert", "--key", "--user", "--password-stdin"} {
			require.Contains(t, res.Stdout, fl, "%v", args)
		}
	}
	for _, args := range [][]string{{"resource", "get", "--help"}, {"lamport", "trace", "--help"}, {"lab", "--help"}, {"etcd", "--help"}, {"--help"}} {
		res := runInProcess(context.Background(), nil, args...)
		require.Equal(t, cmdutil.ExitOK, res.Code)
		require.NotContains(t, res.Stdout, "--endpoints string", "%v", args)
		require.NotContains(t, res.Stdout, "--cacert string", "%v", args)
	}
	res := runInProcess(context.Background(), nil, "scenario", "run", "--help")
	require.Contains(t, res.Stdout, "--endpoints")
	require.Contains(t, res.Stdout, "--dial-timeout")
	require.NotContains(t, res.Stdout, "--cacert")
}

// Issue 25 item 17: a usage error prints the error, the usage line and
// where to read more — not the whole help.
func TestUsageErrorPrintsTheUsageLineOnly(t *testing.T) {
	for _, args := range [][]string{{"lock"}, {"sem", "x"}, {"elect"}, {"lock", "x", "--ttl", "10ms"}} {
		res := runInProcess(context.Background(), nil, args...)
		require.Equal(t, cmdutil.ExitUsage, res.Code, "%v: %s", args, res.Stderr)
		require.Contains(t, res.Stderr, "Usage: coordctl "+args[0]+" ", "%v", args)
		require.Contains(t, res.Stderr, "See 'coordctl "+args[0]+" --help'", "%v", args)
		require.NotContains(t, res.Stderr, "Flags:", "%v", args)
		require.LessOrEqual(t, strings.Count(res.Stderr, "\n"), 4, "%v: %s", args, res.Stderr)
	}
}

// Names that cannot be what the user meant are refused with exit 2 before
// anything is dialled (the endpoint answers nothing), naming the rule: the
// library's rules (primitive.ValidateName), for every command that takes a
// name.
func TestUnusableNamesAreUsageErrors(t *testing.T) {
	t.Parallel()
	env := map[string]string{"COORDCTL_ENDPOINTS": "127.0.0.1:1"}
	cases := []struct {
		args []string
		rule string
	}{
		{[]string{"lock", "x/", "--", "true"}, `ends with "/"`},
		{[]string{"lock", "/my-lock", "--", "true"}, `with the prefix "/"`},
		{[]string{"lock", "status", "a//b"}, "empty segment"},
		{[]string{"sem", "with space", "--limit", "2", "--", "true"}, "white space"},
		{[]string{"sem", "status", "/"}, "no name"},
		{[]string{"sem", "set-limit", "p/limit", "3"}, `ends in "limit"`},
		{[]string{"lock", "slots", "--prefix", "pool/", "--", "true"}, `puts its keys under "pool/slots/"`},
		{[]string{"elect", "tab\there", "--id", "a"}, "white space"},
		{[]string{"sidecar", "--election", "x/", "--id", "a"}, `ends with "/"`},
		{[]string{"claim", "nul\x01", "--owner", "o"}, "control"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			res := runInProcess(context.Background(), env, tc.args...)
			require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, tc.rule)
			require.NotContains(t, res.Stderr, "unreachable", "refused before dialling")
		})
	}
}
