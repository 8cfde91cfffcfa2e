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

// The last rule of ValidateName holds of where the keys live, the prefix
// and the name together: the name "slots" under the prefix "pool/" would
// put a lock's keys among the semaphore pool's slots, where the lock would
// count slot 0 (pool/slots/0, a lease-shaped "0") as a holder. Found by
// TestScopeEqualExactlyWhenKeysAre (rapid seed 1914272681088814947).
func TestValidateKeysReservedEndAcrossPrefix(t *testing.T) {
	t.Parallel()
	cases := []struct {
		prefix, name string
		ok           bool
	}{
		{"pool/", "slots", false},
		{"pool/slo", "ts", false}, // glued: the same keys, pool/slots/
		{"nest2/", "read", false},
		{"a/", "b/limit", false}, // refused by ValidateName already
		{"pool/", "slots/x", true},
		{"/", "slots", true}, // no parent: no primitive keeps keys under "/"
		{"", "slots", true},
		{"pool", "slots", true}, // poolslots/
	}
	for _, tc := range cases {
		t.Run(tc.prefix+"|"+tc.name, func(t *testing.T) {
			err := Config{Kind: KindLock, Name: tc.name, Prefix: tc.prefix}.ValidateKeys()
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, session.ErrInvalidName)) {
				t.Fatalf("ValidateKeys(prefix %q, name %q) = %v, want ok=%v", tc.prefix, tc.name, err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "could not be told") {
				t.Fatalf("ValidateKeys(prefix %q, name %q) = %v, want it to name the rule", tc.prefix, tc.name, err)
			}
		})
	}
}
