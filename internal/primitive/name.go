package primitive

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/coordkit/coordkit/session"
)

// reservedSegments end no name of a lock, semaphore or election: the keys of
// a lock named "N/read" would be N/read/<lease hex>, which are the readers
// of the read-write lock N; likewise for the other infixes and N/limit.
var reservedSegments = []string{"read", "write", "queue", "slots", "limit"}

// ValidateName reports whether name can name a lock, semaphore or election
// (or a claim). A name is one or more segments joined by "/", so that its
// keys, name+"/"+..., are what the user meant:
//
//   - not empty, and no empty segment: no leading or trailing "/", no "//".
//     "/my-lock/" is how etcd's concurrency.NewMutex spells a prefix; its
//     keys are reached with the name "my-lock" under the prefix "/" (the
//     error says so), not with a name of its own shape, which would put the
//     keys under "/my-lock//".
//   - no white space and no control characters (a name is printed, put in
//     environment variables and typed in shells).
//   - not ending in a segment another name's primitives use ("N/read",
//     "N/write", "N/queue", "N/slots", "N/limit"): their keys could not be
//     told from those of N. Config.ValidateKeys applies the same rule to
//     the prefix and the name together ("N/" and "slots").
//
// The error wraps session.ErrInvalidName and names the rule.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty", session.ErrInvalidName)
	}
	if strings.Trim(name, "/") == "" {
		return fmt.Errorf("%w: %q is no name (a name is segments joined by \"/\")", session.ErrInvalidName, name)
	}
	if strings.HasPrefix(name, "/") {
		return fmt.Errorf("%w: %q starts with \"/\" (a name is segments joined by \"/\"): for keys under %q use the name %q with the prefix \"/\"",
			session.ErrInvalidName, name, "/"+strings.Trim(name, "/")+"/", strings.Trim(name, "/"))
	}
	if strings.HasSuffix(name, "/") {
		return fmt.Errorf("%w: %q ends with \"/\" (a name is segments joined by \"/\"): the name %q keeps its keys under %q (etcd's concurrency.NewMutex(s, %q) keeps them under %q)",
			session.ErrInvalidName, name, strings.TrimRight(name, "/"), strings.TrimRight(name, "/")+"/", name, name+"/")
	}
	if strings.Contains(name, "//") {
		return fmt.Errorf("%w: %q has an empty segment (\"//\")", session.ErrInvalidName, name)
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("%w: %q contains white space or a control character (%U)", session.ErrInvalidName, name, r)
		}
	}
	if seg, parent := reservedEnd(name); seg != "" {
		return fmt.Errorf("%w: %q ends in %q, which the keys of %q's read-write lock or semaphore use (its keys could not be told from theirs)", session.ErrInvalidName, name, seg, parent)
	}
	return nil
}

// reservedEnd returns the reserved segment that path (a name, or a prefix
// and a name together: where the keys live) ends in after a non-empty
// parent, and that parent: ("slots", "N") for "N/slots", the keys of
// whose primitives would be N's semaphore slots. "" when it ends in none.
func reservedEnd(path string) (seg, parent string) {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "", ""
	}
	if last := path[i+1:]; slices.Contains(reservedSegments, last) {
		return last, path[:i]
	}
	return "", ""
}
