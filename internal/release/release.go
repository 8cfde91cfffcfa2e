package release

import (
	"fmt"
	"regexp"
	"strings"
)

// Semantic matches a release version as VERSION holds it: vMAJOR.MINOR.PATCH.
var Semantic = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// A Mismatch is one place that names another version than the release's.
type Mismatch struct {
	File string
	Line int
	Got  string // what the place says
	Want string // what it should say
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s:%d: %s, want %s", m.File, m.Line, m.Got, m.Want)
}

// Places that name coordkit's version, each with the submatch that is the
// version.
var (
	// An image of coordctl or coordkit-sidecar with a tag, in any registry
	// ("registry.example.com/coordctl:v0.5.0", "coordkit/coordkit-sidecar:v0.5.0").
	imageRef = regexp.MustCompile(`(?:^|[\s"'/=])(?:coordctl|coordkit-sidecar):([A-Za-z0-9_][A-Za-z0-9_.-]*)`)
	// The version key of a build object (coordctl version -w json,
	// /v1/status's "build").
	buildVersion = regexp.MustCompile(`"module":\s*"github\.com/coordkit/coordkit",\s*"version":\s*"([^"]*)"`)
)

// Check returns the places in file (its path, for the message, and its
// text) that name a version of coordkit other than version.
func Check(version, file string, text []byte) []Mismatch {
	var out []Mismatch
	for i, line := range strings.Split(string(text), "\n") {
		for _, re := range []*regexp.Regexp{imageRef, buildVersion} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				if m[1] != version {
					out = append(out, Mismatch{File: file, Line: i + 1, Got: strings.TrimSpace(m[0]), Want: version})
				}
			}
		}
	}
	return out
}

// Requirement is a text that a file must contain for a release of
// version: the changelog's heading, the compatibility statement's version.
func Requirement(version, file string) (string, bool) {
	switch file {
	case "CHANGELOG.md":
		return "## [" + version + "] - ", true
	case "docs/compatibility.md":
		return "**" + version + "**", true
	}
	return "", false
}
