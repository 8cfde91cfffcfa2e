package hold

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNameAndCommand(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		dash     int
		nameFlag string
		wantName string
		wantCmd  []string
		wantErr  string
	}{
		{"name alone", []string{"jobs"}, -1, "", "jobs", []string{}, ""},
		{"name and command", []string{"jobs", "sh", "-c", "x"}, 1, "", "jobs", []string{"sh", "-c", "x"}, ""},
		{"no name", nil, -1, "", "", nil, "lock needs a NAME"},
		{"command without name", []string{"sh"}, 0, "", "", nil, "lock needs a NAME"},
		{"two names", []string{"a", "b"}, -1, "", "", nil, `unexpected argument "b": put the command after --`},
		{"two names then command", []string{"a", "b", "sh"}, 2, "", "", nil, `unexpected argument "b": give one NAME, then the command after --`},
		{"--name and command", []string{"sh"}, 0, "status", "status", []string{"sh"}, ""},
		{"--name and a stray argument", []string{"x"}, -1, "status", "", nil, `unexpected argument "x": with --name, put the command after --`},
		{"--name and an argument NAME", []string{"x", "sh"}, 1, "status", "", nil, `unexpected argument "x": give the NAME once (--name or argument), then the command after --`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, cmd, err := NameAndCommand("lock", tc.args, tc.dash, tc.nameFlag)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantName, name)
			require.Equal(t, tc.wantCmd, cmd)
		})
	}
}
