package sidecar

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/election"
)

func TestCoordFlagsParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		flags   CoordFlags
		given   bool
		want    Coordination
		wantErr string
	}{
		{"first-come, nothing given", CoordFlags{Policy: "first-come"}, false, Coordination{Policy: election.PolicyFirstCome}, ""},
		{"priority with labels", CoordFlags{Policy: "priority", Priority: 7, Labels: []string{"zone=a", "x="}}, true,
			Coordination{Policy: election.PolicyPriority, Priority: 7, Labels: map[string]string{"zone": "a", "x": ""}}, ""},
		{"no-preempt alone is given", CoordFlags{Policy: "first-come", NoPreempt: true}, true, Coordination{Policy: election.PolicyFirstCome, NoPreempt: true}, ""},
		{"bad policy", CoordFlags{Policy: "bogus"}, true, Coordination{}, `invalid --policy "bogus": want first-come, priority, newest-version, oldest-version`},
		{"bad version", CoordFlags{Policy: "first-come", Version: "nope"}, true, Coordination{}, `invalid --version "nope": want a semantic version`},
		{"label without =", CoordFlags{Policy: "first-come", Labels: []string{"zone"}}, true, Coordination{}, `invalid --label "zone": want KEY=VALUE`},
		{"label without key", CoordFlags{Policy: "first-come", Labels: []string{"=a"}}, true, Coordination{}, `invalid --label "=a": want KEY=VALUE`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.given, tc.flags.Given())
			got, err := tc.flags.Parse()
			_, optErr := tc.flags.ElectionOptions("me")
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.True(t, errors.Is(err, ErrUsage), "a usage error: %v", err)
				require.Equal(t, err, optErr)
				return
			}
			require.NoError(t, err)
			require.NoError(t, optErr)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestCoordFlagsElectionOptionsNoneWhenNotGiven(t *testing.T) {
	opts, err := CoordFlags{Policy: "first-come"}.ElectionOptions("me")
	require.NoError(t, err)
	require.Empty(t, opts)
	opts, err = CoordFlags{Policy: "priority"}.ElectionOptions("me")
	require.NoError(t, err)
	require.Len(t, opts, 1)
}

// Configure checks the API token before the coordination flags and carries
// both into the Config.
func TestFlagsConfigure(t *testing.T) {
	fl := Flags{Election: "e", ID: "i", Listen: "127.0.0.1:0", Coord: CoordFlags{Policy: "priority", Priority: 3}}
	cfg, err := fl.Configure()
	require.NoError(t, err)
	require.Equal(t, Coordination{Policy: election.PolicyPriority, Priority: 3}, cfg.Coordination)
	require.Equal(t, "e", cfg.Name)

	fl.Coord.Policy = "bogus"
	_, err = fl.Configure()
	require.ErrorIs(t, err, ErrUsage)
	require.ErrorContains(t, err, "invalid --policy")

	fl.Listen = "0.0.0.0:4040"
	_, err = fl.Configure()
	require.ErrorIs(t, err, ErrUsage)
	require.ErrorContains(t, err, "needs --api-token-file", "the token is checked first")
}

func TestNewRegistryHasRuntimeCollectors(t *testing.T) {
	mfs, err := NewRegistry().Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	require.True(t, names["go_goroutines"], "the Go collector")
}

func TestResignRequestWithDefaults(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	require.Equal(t, DefaultURL, ResignRequest{}.WithDefaults(getenv).URL)
	env[EnvURL] = "http://10.0.0.1:4040"
	require.Equal(t, "http://10.0.0.1:4040", ResignRequest{}.WithDefaults(getenv).URL)
	require.Equal(t, "http://x:1", ResignRequest{URL: "http://x:1"}.WithDefaults(getenv).URL, "a URL given wins")
}
