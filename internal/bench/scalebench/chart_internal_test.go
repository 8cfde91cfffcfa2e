package scalebench

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestXMLEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"a < b > c", "a &lt; b &gt; c"},
		{"R&D", "R&amp;D"},
		{"ünïcode ×", "ünïcode ×"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			var b strings.Builder
			require.NoError(t, xmlEscape(&b, tc.in))
			require.Equal(t, tc.want, b.String())
		})
	}
}
