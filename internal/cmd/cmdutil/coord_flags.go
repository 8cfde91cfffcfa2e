package cmdutil

import (
	"github.com/spf13/pflag"

	"github.com/coordkit/coordkit/internal/sidecar"
)

// AddCoordFlags registers the coordinated-election flags elect and sidecar
// share (internal/sidecar parses them); versionHelp says what an empty
// --version means.
func AddCoordFlags(fl *pflag.FlagSet, c *sidecar.CoordFlags, versionHelp string) {
	fl.StringVar(&c.Policy, "policy", "first-come", "who should lead: "+sidecar.PolicyNames())
	fl.BoolVar(&c.NoPreempt, "no-preempt", false, "a preferred candidate that joins waits for the leader to resign instead of taking over")
	fl.Int64Var(&c.Priority, "priority", 0, "this candidate's priority (higher leads under --policy priority; breaks version ties)")
	fl.StringVar(&c.Version, "version", "", "this candidate's semantic version, e.g. 1.4.0 ("+versionHelp+")")
	fl.StringArrayVar(&c.Labels, "label", nil, "a label KEY=VALUE shown by --candidates (repeatable)")
}
