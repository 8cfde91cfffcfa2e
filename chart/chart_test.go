package chart

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFormatValue(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 3: "3", 1.25: "1.25", 0.0001: "0", 2.0 / 3: "0.667", -4: "-4"} {
		assert.Equal(t, want, FormatValue(in), "%v", in)
	}
}

// WriteSVG draws lines without categories and bars with them, as one
// well-formed SVG element with the title and the series named, text escaped.
func TestWriteSVG(t *testing.T) {
	for _, c := range []Chart{
		{Title: "Write latency <p50>", XLabel: "delay (ms)", YLabel: "ms", Series: []Series{
			{Name: "p50", Points: []Point{{0.5, 1.2}, {10, 21}}},
			{Name: "model", Dashed: true, Points: []Point{{0.5, 1}, {10, 20}}}}},
		{Title: "Read cost & mode", YLabel: "µs", Categories: []string{"stale", "lease"}, Series: []Series{
			{Name: "p50", Points: []Point{{0, 5}, {1, 900}}}}},
		{Title: "empty"},
	} {
		var b bytes.Buffer
		require.NoError(t, WriteSVG(&b, c))
		out := b.String()
		require.True(t, strings.HasPrefix(out, "<svg "), out)
		d := xml.NewDecoder(strings.NewReader(out))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			require.NoError(t, err, c.Title)
		}
		assert.Contains(t, out, "<title>"+esc(c.Title)+"</title>")
		for _, s := range c.Series {
			assert.Contains(t, out, s.Name)
		}
		if len(c.Categories) > 0 {
			assert.Contains(t, out, "<rect x=")
			assert.NotContains(t, out, "<polyline")
		} else if len(c.Series) > 0 {
			assert.Contains(t, out, "<polyline")
			assert.Contains(t, out, `stroke-dasharray="6,4"`, "a model is dashed")
		}
	}
}

func TestNiceStep(t *testing.T) {
	for _, tc := range []struct {
		span float64
		n    int
		want float64
	}{{10, 5, 2}, {100, 8, 20}, {0, 5, 1}, {7, 0, 1}, {0.3, 3, 0.1}} {
		assert.InDelta(t, tc.want, NiceStep(tc.span, tc.n), 1e-12, "%v/%d", tc.span, tc.n)
	}
}
