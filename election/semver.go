package election

import (
	"strconv"
	"strings"
)

// version is a parsed semantic version (semver.org 2.0.0). Build metadata
// is dropped: it does not take part in precedence.
type version struct {
	major, minor, patch uint64
	pre                 []string // dot-separated pre-release identifiers
}

// parseVersion parses "MAJOR.MINOR.PATCH[-PRE][+BUILD]", with an optional
// leading "v" (what Go's build info and most tags print). It reports false
// for anything else: a candidate with such a version is never preferred for
// its version.
func parseVersion(s string) (version, bool) {
	s = strings.TrimPrefix(s, "v")
	if i := strings.IndexByte(s, '+'); i >= 0 {
		if !validIdents(s[i+1:], false) {
			return version{}, false
		}
		s = s[:i]
	}
	var v version
	if i := strings.IndexByte(s, '-'); i >= 0 {
		if !validIdents(s[i+1:], true) {
			return version{}, false
		}
		v.pre = strings.Split(s[i+1:], ".")
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return version{}, false
	}
	nums := [3]*uint64{&v.major, &v.minor, &v.patch}
	for i, p := range parts {
		n, ok := numericIdent(p)
		if !ok {
			return version{}, false
		}
		*nums[i] = n
	}
	return v, true
}

// numericIdent parses a numeric identifier: digits, no leading zero.
func numericIdent(s string) (uint64, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// validIdents checks dot-separated identifiers of [0-9A-Za-z-]; pre-release
// numeric identifiers must not have leading zeros.
func validIdents(s string, pre bool) bool {
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		digits := true
		for _, r := range id {
			switch {
			case r >= '0' && r <= '9':
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '-':
				digits = false
			default:
				return false
			}
		}
		if pre && digits && len(id) > 1 && id[0] == '0' {
			return false
		}
	}
	return true
}

// compare returns -1, 0 or +1 as v has lower, equal or higher precedence
// than w (semver.org §11).
func (v version) compare(w version) int {
	for _, d := range [][2]uint64{{v.major, w.major}, {v.minor, w.minor}, {v.patch, w.patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(v.pre) == 0 && len(w.pre) == 0:
		return 0
	case len(v.pre) == 0:
		return 1 // a release outranks its pre-releases
	case len(w.pre) == 0:
		return -1
	}
	for i := 0; i < len(v.pre) && i < len(w.pre); i++ {
		if c := compareIdent(v.pre[i], w.pre[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(v.pre) < len(w.pre):
		return -1
	case len(v.pre) > len(w.pre):
		return 1
	}
	return 0
}

// compareIdent orders two pre-release identifiers: numeric ones by value
// and below alphanumeric ones, which compare in ASCII order.
func compareIdent(a, b string) int {
	na, aNum := numericIdent(a)
	nb, bNum := numericIdent(b)
	switch {
	case aNum && bNum:
		switch {
		case na < nb:
			return -1
		case na > nb:
			return 1
		}
		return 0
	case aNum:
		return -1
	case bNum:
		return 1
	}
	return strings.Compare(a, b)
}

// CompareVersions orders two semantic versions by precedence (semver.org
// 2.0.0; a leading "v" is allowed, build metadata ignored): -1 if a < b,
// 0 if equal, +1 if a > b. A version that does not parse sorts below every
// one that does; two that do not parse are equal.
func CompareVersions(a, b string) int {
	va, okA := parseVersion(a)
	vb, okB := parseVersion(b)
	switch {
	case okA && okB:
		return va.compare(vb)
	case okA:
		return 1
	case okB:
		return -1
	}
	return 0
}

// ValidVersion reports whether s is a semantic version CompareVersions
// orders ("1.4.0", "v2.0.0-rc.1+build.5").
func ValidVersion(s string) bool {
	_, ok := parseVersion(s)
	return ok
}
