package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFromBuildInfo(t *testing.T) {
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want Info
	}{
		{
			name: "a release build from a clean tree",
			bi: debug.BuildInfo{
				GoVersion: "go1.26.8",
				Path:      "github.com/coordkit/coordkit/cmd/coordkit-sidecar",
				Main:      debug.Module{Path: "github.com/coordkit/coordkit", Version: "v0.3.0"},
				Deps: []*debug.Module{
					{Path: EtcdClientModule, Version: "v3.7.3"},
					{Path: EtcdServerModule, Version: "v3.7.1", Replace: &debug.Module{Path: "../etcd/server", Version: "v3.7.2"}},
					{Path: "github.com/spf13/cobra", Version: "v1.10.2"},
				},
				Settings: []debug.BuildSetting{
					{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"},
					{Key: "vcs.revision", Value: "0123456789abcdef0123"},
					{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"},
					{Key: "vcs.modified", Value: "false"},
				},
			},
			want: Info{
				Module: "github.com/coordkit/coordkit", Version: "v0.3.0", Program: "coordkit-sidecar",
				Revision: "0123456789abcdef0123", Time: "2026-12-01T10:00:00Z",
				GoVersion: "go1.26.8", Platform: "linux/arm64",
				EtcdClient: "v3.7.3", EtcdServer: "v3.7.2",
			},
		},
		{
			name: "a dirty tree",
			bi: debug.BuildInfo{
				GoVersion: "go1.26.8",
				Main:      debug.Module{Path: "github.com/coordkit/coordkit"},
				Settings: []debug.BuildSetting{
					{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"},
					{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"},
				},
			},
			want: Info{Module: "github.com/coordkit/coordkit", Version: "(devel)", Revision: "abc", Modified: true,
				GoVersion: "go1.26.8", Platform: "linux/amd64"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, FromBuildInfo(&tt.bi))
		})
	}
}

func TestShort(t *testing.T) {
	require.Equal(t, "v1.0.0", Info{Version: "v1.0.0"}.Short())
	require.Equal(t, "(devel) (0123456789ab, modified)", Info{Version: "(devel)", Revision: "0123456789abcdef", Modified: true}.Short())
}

func TestReadInATestBinary(t *testing.T) {
	in := Read()
	require.NotEmpty(t, in.GoVersion)
	require.NotEmpty(t, in.Platform)
	require.NotEmpty(t, in.Version)
}

// A version stamped with -ldflags -X (make build, make release) wins over
// the module version the toolchain recorded.
func TestReadPrefersTheStampedVersion(t *testing.T) {
	old := version
	t.Cleanup(func() { version = old })
	version = ""
	unstamped := Read().Version
	version = "v9.8.7-2-gabc1234-dirty"
	require.Equal(t, "v9.8.7-2-gabc1234-dirty", Read().Version)
	require.NotEqual(t, version, unstamped)
}

func TestWriteTextNamesTheProgram(t *testing.T) {
	var b strings.Builder
	require.NoError(t, Info{Program: "coordkit-sidecar", Version: "v0.5.0"}.WriteText(&b))
	require.True(t, strings.HasPrefix(b.String(), "coordkit-sidecar v0.5.0\n"), b.String())
}

func TestInfoWriteText(t *testing.T) {
	base := Info{Module: "github.com/coordkit/coordkit", Version: "v0.4.0", GoVersion: "go1.26.8", Platform: "linux/amd64",
		EtcdClient: "v3.7.3", EtcdServer: "v3.7.2"}
	tests := []struct {
		name     string
		revision string
		modified bool
		want     string
	}{
		{name: "no VCS information", want: "unknown (built without VCS information)"},
		{name: "clean tree", revision: "abc123", want: "abc123"},
		{name: "modified tree", revision: "abc123", modified: true, want: "abc123 (modified)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := base
			in.Revision, in.Modified = tt.revision, tt.modified
			var b strings.Builder
			require.NoError(t, in.WriteText(&b))
			require.Equal(t, "coordctl v0.4.0\nmodule:      github.com/coordkit/coordkit\nrevision:    "+tt.want+
				"\ngo:          go1.26.8 linux/amd64\netcd client: v3.7.3\netcd server: v3.7.2\n", b.String())
		})
	}
}
