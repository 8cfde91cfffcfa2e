package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const root = "../.."

func readVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	require.NoError(t, err)
	v := strings.TrimSpace(string(b))
	require.Regexp(t, Semantic, v, "VERSION holds vMAJOR.MINOR.PATCH")
	return v
}

// userFiles are the files a user reads a version in: the manifests, the
// docs, the README and changelog, and the Go sources whose help or
// examples print one.
func userFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"deploy/kubernetes/*.yaml", "docs/*.md", "*.md", "internal/cmd/*/*.go", "chart/*.yaml"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		require.NoError(t, err)
		for _, f := range m {
			if !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
	}
	require.Greater(t, len(files), 20)
	return files
}

func TestEveryVersionAUserReadsIsTheRelease(t *testing.T) {
	version := readVersion(t)
	var bad []string
	images := 0
	for _, f := range userFiles(t) {
		text, err := os.ReadFile(f)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, f)
		for _, m := range Check(version, rel, text) {
			bad = append(bad, m.String())
		}
		images += len(imageRef.FindAll(text, -1))
	}
	require.Empty(t, bad, "these name another version than VERSION's %s: bump them with it", version)
	require.GreaterOrEqual(t, images, 2, "the manifests and docs name the image they ship with")

	for _, f := range []string{"CHANGELOG.md", "docs/compatibility.md"} {
		want, _ := Requirement(version, f)
		text, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		require.Contains(t, string(text), want, "%s names the release %s", f, version)
	}
}

// The Makefile builds what VERSION says: make release refuses another
// version, and the images are tagged with the build's version.
func TestTheMakefileReleasesTheVersionFile(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	for _, want := range []string{
		`want="$$(cat VERSION)"; if [ "$(VERSION)" != "$$want" ]`,
		`--version $(VERSION)`,
		`git describe --tags --always --dirty`,
		`-X github.com/coordkit/coordkit/internal/buildinfo.version=$(VERSION)`,
	} {
		require.Contains(t, string(mk), want)
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{name: "the release's image", text: "image: registry.example.com/coordctl:v0.5.0 # push"},
		{name: "an older image", text: "a\n  image: registry.example.com/coordctl:v0.4.0", want: []string{"f:2: /coordctl:v0.4.0, want v0.5.0"}},
		{name: "the sidecar's image", text: `docker load; run "coordkit/coordkit-sidecar:2.3.0"`, want: []string{`f:1: /coordkit-sidecar:2.3.0, want v0.5.0`}},
		{name: "a build object", text: `{"module":"github.com/coordkit/coordkit","version":"v0.4.0","revision":"…"}`,
			want: []string{`f:1: "module":"github.com/coordkit/coordkit","version":"v0.4.0", want v0.5.0`}},
		{name: "an application's version is not ours", text: "- --version=2.3.0\n--policy newest-version --version 2.3.0"},
		{name: "prose about coordctl: is not an image", text: "coordctl: error: etcd unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, m := range Check("v0.5.0", "f", []byte(tt.text)) {
				got = append(got, m.String())
			}
			require.Equal(t, tt.want, got)
		})
	}
}
