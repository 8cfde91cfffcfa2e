package buildinfo

import (
	"fmt"
	"io"
	"path"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is the release version the build stamped into the binary
// (`make build`, `make release`: -ldflags "-X
// github.com/coordkit/coordkit/internal/buildinfo.version=$(git describe
// --tags --always --dirty)"); empty in a plain `go build`, which leaves
// the module version the toolchain recorded.
var version string

// Module paths whose versions Info reports.
const (
	EtcdClientModule = "go.etcd.io/etcd/client/v3"
	EtcdServerModule = "go.etcd.io/etcd/server/v3"
)

// Info is what `coordctl version` prints and the sidecar serves.
type Info struct {
	// Module is the main module's path; Version the version the build
	// stamped (-ldflags -X, from git describe: "v0.5.0", or
	// "v0.5.0-3-gabc1234-dirty" between tags), else the module's version
	// as the Go toolchain recorded it ("v1.2.3", a pseudo-version, or
	// "(devel)").
	Module  string `json:"module"`
	Version string `json:"version"`
	// Program is the command built: coordctl or coordkit-sidecar (the
	// base name of the main package under cmd/); empty when unknown.
	Program string `json:"program,omitempty"`
	// Revision, Time and Modified come from the VCS: the commit, its time
	// (RFC 3339) and whether the work tree had uncommitted changes. Empty
	// and false when the build recorded no VCS information.
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified"`
	// GoVersion is the toolchain that built the binary; Platform is
	// GOOS/GOARCH.
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	// EtcdClient and EtcdServer are the versions of etcd's client and
	// server libraries linked in (empty when not linked).
	EtcdClient string `json:"etcd_client"`
	EtcdServer string `json:"etcd_server"`
}

// Read returns the running binary's Info. Without build information
// (a binary built without module support) only GoVersion and Platform
// are set.
func Read() Info {
	in := Info{Version: "unknown", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		in = FromBuildInfo(bi)
	}
	if version != "" {
		in.Version = version
	}
	return in
}

// FromBuildInfo extracts Info from bi; it is pure, for tests.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Module: bi.Main.Path, Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	if strings.HasPrefix(bi.Path, bi.Main.Path+"/cmd/") {
		in.Program = path.Base(bi.Path)
	}
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if goos == "" {
		goos = runtime.GOOS
	}
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	in.Platform = goos + "/" + goarch
	for _, d := range bi.Deps {
		v := d.Version
		if d.Replace != nil && d.Replace.Version != "" {
			v = d.Replace.Version
		}
		switch d.Path {
		case EtcdClientModule:
			in.EtcdClient = v
		case EtcdServerModule:
			in.EtcdServer = v
		}
	}
	return in
}

// Short is the one-line form: "v1.2.3 (abc1234, modified)".
func (in Info) Short() string {
	s := in.Version
	if in.Revision != "" {
		rev := in.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if in.Modified {
			rev += ", modified"
		}
		s += " (" + rev + ")"
	}
	return s
}

// WriteText writes in as `coordctl version` prints it: the program and
// version, then one field a line, the revision marked when the tree was
// modified or when the build recorded none.
func (in Info) WriteText(w io.Writer) error {
	prog := in.Program
	if prog == "" {
		prog = "coordctl"
	}
	rev := in.Revision
	if rev == "" {
		rev = "unknown (built without VCS information)"
	} else if in.Modified {
		rev += " (modified)"
	}
	_, err := fmt.Fprintf(w, "%s %s\nmodule:      %s\nrevision:    %s\ngo:          %s %s\netcd client: %s\netcd server: %s\n",
		prog, in.Version, in.Module, rev, in.GoVersion, in.Platform, in.EtcdClient, in.EtcdServer)
	return err
}
