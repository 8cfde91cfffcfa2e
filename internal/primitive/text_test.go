package primitive

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Issue 32: an --id with a newline and quotes printed forged "leader id=…"
// lines in text mode.
func TestTextValueCannotForgeALine(t *testing.T) {
	require.Equal(t, "web-1", TextValue("web-1"))
	require.Equal(t, "zone=eu", TextValue("zone=eu"))
	require.Equal(t, `""`, TextValue(""))
	forged := "a token=1\nleader id=evil token=999"
	got := TextValue(forged)
	require.NotContains(t, got, "\n")
	require.Equal(t, `"a token=1\nleader id=evil token=999"`, got)
	require.Equal(t, `"say \"hi\""`, TextValue(`say "hi"`))
	require.False(t, strings.ContainsAny(TextValue("a\x1b[2Jb"), "\x1b"))
}
