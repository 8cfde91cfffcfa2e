package primitive

import (
	"strconv"
	"unicode"
)

// TextValue is s as one field of a text-mode line ("id=VALUE"): as it is
// when it is printable with no space, quote or backslash, else quoted in
// Go syntax, so that an ID or a label with a newline or quotes cannot forge
// a line or a field of its own ("leader id=…"). JSON output escapes by
// itself. Pure.
func TextValue(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) || r == '"' || r == '\\' {
			return strconv.Quote(s)
		}
	}
	return s
}
