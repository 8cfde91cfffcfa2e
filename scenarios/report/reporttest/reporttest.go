// Package reporttest checks rendered reports in tests.
package reporttest

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
)

// CheckHTML asserts that page is well-formed XML, parses as HTML, and
// fetches nothing: no script, no external src or href, no @import or url().
func CheckHTML(t testing.TB, page []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(page))
	dec.Strict = true
	dec.Entity = xml.HTMLEntity
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the page must be well-formed XML")
		switch tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		}
	}
	assert.Equal(t, 0, depth)

	doc, err := html.Parse(bytes.NewReader(page))
	require.NoError(t, err)
	var walk func(n *html.Node)
	sawSVG := false
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			assert.NotEqual(t, "script", n.Data, "no script")
			assert.NotEqual(t, "link", n.Data, "no linked stylesheet")
			assert.NotEqual(t, "iframe", n.Data)
			assert.NotEqual(t, "img", n.Data, "charts are inline SVG")
			if n.Data == "svg" {
				sawSVG = true
			}
			for _, a := range n.Attr {
				if a.Key == "src" || a.Key == "href" || strings.HasSuffix(a.Key, ":href") {
					v := strings.ToLower(strings.TrimSpace(a.Val))
					assert.True(t, strings.HasPrefix(v, "#"), "%s=%q must be a fragment", a.Key, a.Val)
				}
			}
		}
		if n.Type == html.ElementNode && n.Data == "style" && n.FirstChild != nil {
			css := strings.ToLower(n.FirstChild.Data)
			assert.NotContains(t, css, "@import")
			assert.NotContains(t, css, "url(")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	assert.True(t, sawSVG || !bytes.Contains(page, []byte("<svg")), "svg elements parse as such")
}
