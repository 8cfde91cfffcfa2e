package buildinfo

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Module paths whose versions Info reports.
const (
	EtcdClientModule = "go.etcd.io/etcd/client/v3"
	EtcdServerModule = "go.etcd.io/etcd/server/v3"
)

// Info is what `coordctl version` prints and the sidecar serves.
type Info struct {
	// Module is the main module's path; Version its version as the Go
	// toolchain stamped it ("v1.2.3", a pseudo-version, or "(devel)").
	Module  string `json:"module"`
	Version string `json:"version"`
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
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo extracts Info from bi; it is pure, for tests.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Module: bi.Main.Path, Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if in.Version == "" {
		in.Version = "(devel)"
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

// WriteText writes in as `coordctl version` prints it: one field a line,
// the revision marked when the tree was modified or when the build
// recorded none.
func (in Info) WriteText(w io.Writer) error {
	rev := in.Revision
	if rev == "" {
		rev = "unknown (built without VCS information)"
	} else if in.Modified {
		rev += " (modified)"
	}
	_, err := fmt.Fprintf(w, "coordctl %s\nmodule:      %s\nrevision:    %s\ngo:          %s %s\netcd client: %s\netcd server: %s\n",
		in.Version, in.Module, rev, in.GoVersion, in.Platform, in.EtcdClient, in.EtcdServer)
	return err
}
