package semcmd

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// (Was semaphore.TestParseLimit: the N of sem set-limit is the command's.)
func TestParseLimit(t *testing.T) {
	n, err := parseLimit("4")
	require.NoError(t, err)
	require.Equal(t, 4, n)
	for _, bad := range []string{"0", "-1", "x", "", "1.5"} {
		_, err := parseLimit(bad)
		require.Error(t, err, bad)
	}
}
