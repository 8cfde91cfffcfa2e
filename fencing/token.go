package fencing

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Token is a fencing token: a positive number that grows from one holder of
// a scope to the next. coordkit's locks and elections use the create revision
// of the holder's key in etcd, so a Token fits in an int64 (MaxToken). The
// zero Token is not a valid token; it means "no token" (for example the floor
// of a scope that has admitted nothing).
type Token uint64

// MaxToken is the largest valid token: the largest etcd revision.
const MaxToken Token = math.MaxInt64

// String returns the token in decimal.
func (t Token) String() string { return strconv.FormatUint(uint64(t), 10) }

// Valid reports whether t is a usable token (1..MaxToken).
func (t Token) Valid() bool { return t > 0 && t <= MaxToken }

// ParseToken parses a decimal fencing token as it appears in a header or a
// flag: digits only (no sign, no spaces, no leading zeros, so that one token
// has one spelling), between 1 and MaxToken. Its errors
// wrap ErrInvalidToken and say what was wrong.
func ParseToken(s string) (Token, error) {
	bad := func(why string) (Token, error) {
		return 0, fmt.Errorf("%w %q: %s", ErrInvalidToken, s, why)
	}
	switch {
	case s == "":
		return bad("empty")
	case strings.TrimSpace(s) != s || strings.ContainsAny(s, " \t\r\n"):
		return bad("must not contain spaces")
	case s[0] == '-':
		return bad("must be positive")
	case s[0] == '+':
		return bad("must be digits only, without a sign")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return bad("not a decimal integer")
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return bad("must not have leading zeros")
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || Token(n) > MaxToken {
		return bad(fmt.Sprintf("out of range (max %d)", MaxToken))
	}
	if n == 0 {
		return bad("must be positive")
	}
	return Token(n), nil
}
