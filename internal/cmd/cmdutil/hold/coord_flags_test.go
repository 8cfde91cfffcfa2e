package hold

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/sidecar"
)

func isUsage(err error) bool {
	var u *cmdutil.UsageError
	return errors.As(err, &u)
}

func TestCoordFlagsParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		flags   CoordFlags
		given   bool
		want    sidecar.Coordination
		wantErr string
	}{
		{"first-come, nothing given", CoordFlags{Policy: "first-come"}, false, sidecar.Coordination{Policy: election.PolicyFirstCome}, ""},
		{"priority with labels", CoordFlags{Policy: "priority", Priority: 7, Labels: []string{"zone=a", "x="}}, true,
			sidecar.Coordination{Policy: election.PolicyPriority, Priority: 7, Labels: map[string]string{"zone": "a", "x": ""}}, ""},
		{"no-preempt alone is given", CoordFlags{Policy: "first-come", NoPreempt: true}, true, sidecar.Coordination{Policy: election.PolicyFirstCome, NoPreempt: true}, ""},
		{"bad policy", CoordFlags{Policy: "bogus"}, true, sidecar.Coordination{}, `invalid --policy "bogus": want first-come, priority, newest-version, oldest-version`},
		{"bad version", CoordFlags{Policy: "first-come", Version: "nope"}, true, sidecar.Coordination{}, `invalid --version "nope": want a semantic version`},
		{"label without =", CoordFlags{Policy: "first-come", Labels: []string{"zone"}}, true, sidecar.Coordination{}, `invalid --label "zone": want KEY=VALUE`},
		{"label without key", CoordFlags{Policy: "first-come", Labels: []string{"=a"}}, true, sidecar.Coordination{}, `invalid --label "=a": want KEY=VALUE`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.given, tc.flags.Given())
			got, err := tc.flags.Parse()
			_, optErr := tc.flags.ElectionOptions("me")
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.True(t, isUsage(err), "a usage error: %v", err)
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
