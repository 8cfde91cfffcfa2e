package etcddial

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFlagsValidate(t *testing.T) {
	t.Parallel()
	ok := Flags{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: time.Second, CommandTimeout: time.Second}
	cases := []struct {
		name string
		edit func(*Flags)
		want string // "" means valid
	}{
		{"defaults", func(*Flags) {}, ""},
		{"list in one element", func(f *Flags) { f.Endpoints = []string{"a:1, b:2"} }, ""},
		{"zero dial timeout", func(f *Flags) { f.DialTimeout = 0 }, "invalid --dial-timeout 0s: must be positive"},
		{"negative command timeout", func(f *Flags) { f.CommandTimeout = -time.Second }, "invalid --command-timeout -1s: must be positive"},
		{"no endpoints", func(f *Flags) { f.Endpoints = []string{" , "} }, "no etcd endpoints: set --endpoints or COORDCTL_ENDPOINTS"},
		{"bad endpoint", func(f *Flags) { f.Endpoints = []string{"ftp://x:1"} }, `invalid --endpoints "ftp://x:1": unknown scheme "ftp"; want host:port or http(s)://host:port`},
		{"user without password", func(f *Flags) { f.User = "alice" }, "NAME:PASSWORD"},
		{"cert without key", func(f *Flags) { f.Cert = "c.pem" }, "--cert and --key must be given together"},
		{"missing CA file", func(f *Flags) { f.CACert = "/nonexistent/ca.pem" }, "invalid --cacert"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := ok
			tc.edit(&f)
			err := f.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestFlagsConfig(t *testing.T) {
	t.Parallel()
	f := Flags{Endpoints: []string{"a:1,b:2", "c:3"}, DialTimeout: time.Second, User: "alice:pw", CACert: "ca.pem"}
	cfg, err := f.Config(nil)
	require.NoError(t, err)
	require.Equal(t, Config{Endpoints: []string{"a:1", "b:2", "c:3"}, DialTimeout: time.Second, CACert: "ca.pem", Username: "alice", Password: "pw"}, cfg)

	f.User, f.PasswordStdin = "bob", true
	cfg, err = f.Config(strings.NewReader("secret\nrest"))
	require.NoError(t, err)
	require.Equal(t, "bob", cfg.Username)
	require.Equal(t, "secret", cfg.Password)

	_, err = f.Config(strings.NewReader("\n"))
	require.EqualError(t, err, "--password-stdin: empty password on standard input")
}
