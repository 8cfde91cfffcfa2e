package sidecarroot

import (
	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil/program"
	sidecarcmd "github.com/coordkit/coordkit/internal/cmd/sidecar"
	"github.com/coordkit/coordkit/internal/cmd/version"
)

// Name is the binary's name.
const Name = "coordkit-sidecar"

// Main runs coordkit-sidecar with the process's arguments and streams and
// returns its exit code.
func Main() int { return program.Main(NewCmd, program.EtcdDeadlineHint) }

// NewCmd returns the root of coordkit-sidecar's tree on f.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   Name,
		Short: "coordctl's leader-election sidecar alone, for a small image",
		Long: `coordkit-sidecar is coordctl with only the sidecar: 'coordkit-sidecar sidecar'
is 'coordctl sidecar' (the same flags, HTTP API, output and exit codes) and
'coordkit-sidecar sidecar resign' is 'coordctl sidecar resign', so a manifest's
arguments work with either image. It has no embedded etcd, lab, SQL or
benchmark commands: use coordctl for those.

Exit codes: 0 ok, 1 error, 2 usage, 3 not acquired, 4 lost while holding,
5 rejected as stale by fencing, 6 outcome unknown. In exec modes the child's
code passes through.`,
		Example: `  coordkit-sidecar sidecar --election web --id "$POD_NAME" --listen :4040 --api-token-file /etc/coordkit/api-token
  coordkit-sidecar sidecar resign --url http://127.0.0.1:4040
  coordkit-sidecar version -w json`,
	}
	program.SetUpRoot(f, root)
	root.AddCommand(sidecarcmd.NewCmd(f))
	root.AddCommand(version.NewCmd(f))
	program.RejectUnknownSubcommands(root)
	return root
}
