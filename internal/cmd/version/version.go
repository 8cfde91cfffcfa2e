package version

import (
	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/buildinfo"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// NewCmd returns the command coordctl version.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print coordctl's version, VCS revision, Go version and etcd library versions",
		Long: `Print which build of coordctl this is, from the binary's build information:
the module version, the VCS revision and whether the tree was modified, the
time of that commit, the Go version and platform, and the versions of etcd's
client and server libraries linked in. 'make build' and 'make image' record
the revision; a binary built with -buildvcs=false says it has none.

The sidecar serves the same object on GET /v1/status and as the labels of
its coordctl_build_info metric.`,
		Example: `  coordctl version
  coordctl version -w json   # {"module":"github.com/coordkit/coordkit","version":"v0.5.0","revision":"…","modified":false,…}`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdutil.PrintResult(f, cmdutil.TextOutput{V: buildinfo.Read()})
		},
	}
}
