package fencing

import (
	"errors"
	"strings"
	"testing"
)

func TestTokenParse(t *testing.T) {
	cases := []struct {
		name, in string
		want     Token
		errHas   string
	}{
		{"one", "1", 1, ""},
		{"typical revision", "4211", 4211, ""},
		{"leading zeros", "007", 0, "leading zeros"},
		{"one leading zero", "05", 0, "leading zeros"},
		{"max", "9223372036854775807", MaxToken, ""},
		{"empty", "", 0, "empty"},
		{"zero", "0", 0, "positive"},
		{"zeros", "000", 0, "leading zeros"},
		{"zero then sign", "0-5", 0, "decimal"},
		{"negative", "-3", 0, "positive"},
		{"plus sign", "+5", 0, "sign"},
		{"letters", "abc", 0, "decimal"},
		{"hex", "0x10", 0, "decimal"},
		{"float", "1.5", 0, "decimal"},
		{"exponent", "1e3", 0, "decimal"},
		{"leading space", " 5", 0, "spaces"},
		{"trailing space", "5 ", 0, "spaces"},
		{"inner space", "1 2", 0, "spaces"},
		{"newline", "5\n", 0, "spaces"},
		{"above int64", "9223372036854775808", 0, "out of range"},
		{"uint64 overflow", "18446744073709551616", 0, "out of range"},
		{"huge", strings.Repeat("9", 40), 0, "out of range"},
		{"unicode digit", "٣", 0, "decimal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseToken(tc.in)
			if tc.errHas == "" {
				if err != nil || got != tc.want {
					t.Fatalf("ParseToken(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
				}
				if got.String() != strings.TrimLeft(tc.in, "0") {
					t.Fatalf("String() = %q", got.String())
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseToken(%q) = %d, want an error", tc.in, got)
			}
			if !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("error %v does not wrap ErrInvalidToken", err)
			}
			if !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("error %q does not say %q", err, tc.errHas)
			}
			if got != 0 {
				t.Fatalf("got token %d with an error", got)
			}
		})
	}
}

func TestTokenValid(t *testing.T) {
	for tok, want := range map[Token]bool{0: false, 1: true, MaxToken: true, MaxToken + 1: false} {
		if tok.Valid() != want {
			t.Errorf("Token(%d).Valid() = %v", tok, !want)
		}
	}
}

func TestTokenValidateScope(t *testing.T) {
	for _, s := range []string{"", strings.Repeat("x", MaxScopeLen+1), "a\nb", "tab\there"} {
		if err := ValidateScope(s); !errors.Is(err, ErrInvalidScope) {
			t.Errorf("ValidateScope(%q) = %v, want ErrInvalidScope", s, err)
		}
	}
	for _, s := range []string{"jobs/nightly", "x", strings.Repeat("x", MaxScopeLen), "ünïcode"} {
		if err := ValidateScope(s); err != nil {
			t.Errorf("ValidateScope(%q) = %v", s, err)
		}
	}
}
