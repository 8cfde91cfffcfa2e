package safety

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValueEncoding(t *testing.T) {
	for _, tc := range []struct {
		v  int
		id string
	}{{0, "c1-1"}, {41, "x-3.1234"}, {7, ""}} {
		v, id, err := ParseValue(FormatValue(tc.v, tc.id))
		require.NoError(t, err)
		require.Equal(t, tc.v, v)
		require.Equal(t, tc.id, id)
	}
	v, id, err := ParseValue("12")
	require.NoError(t, err)
	require.Equal(t, 12, v)
	require.Empty(t, id)
	_, _, err = ParseValue("twelve c1-1")
	require.Error(t, err)
	_, _, err = ParseValue("")
	require.Error(t, err)
}
