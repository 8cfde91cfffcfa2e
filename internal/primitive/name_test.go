package primitive

import (
	"errors"
	"strings"
	"testing"

	"github.com/coordkit/coordkit/session"
)

// ValidateName refuses what cannot be what the user meant, naming the rule.
// (Was session.TestValidateName; the slash, space and control cases are new.)
func TestValidateName(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		ok   bool
		rule string // a word of the error when refused
	}{
		{"jobs/nightly", true, ""},
		{"read", true, ""}, // no parent whose layout it could be part of
		{"x/reader", true, ""},
		{"a.b-c_d:e@f", true, ""},
		{"", false, "empty"},
		{"nest2/read", false, "read"},
		{"a/b/write", false, "write"},
		{"pool/queue", false, "queue"},
		{"pool/slots", false, "slots"},
		{"pool/limit", false, "limit"},
		{"x/", false, "ends with"},
		{"/", false, "no name"},
		{"/my-lock", false, "prefix \"/\""},
		{"/my-lock/", false, "prefix \"/\""},
		{"a//b", false, "empty segment"},
		{"with space", false, "white space"},
		{"tab\there", false, "white space"},
		{"nl\nid", false, "white space"},
		{"nul\x00", false, "control"},
		{"del\x7f", false, "control"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateName(tc.name)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, session.ErrInvalidName)) {
				t.Fatalf("ValidateName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), tc.rule) {
				t.Fatalf("ValidateName(%q) = %v, want it to name the rule (%q)", tc.name, err, tc.rule)
			}
		})
	}
}
