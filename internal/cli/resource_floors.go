package cli

import (
	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/fencing"
)

func newResourceFloorsCmd(f *factory) *cobra.Command {
	opts := &resourceOptions{}
	cmd := &cobra.Command{
		Use:   "floors",
		Short: "Print every scope's floor and the highest, to choose etcd's revision bump after a restore",
		Long: `Print the floor of every scope (the highest token admitted), then the highest
floor of all: 'highest=N scope=S' (with -w json
{"floors":{SCOPE:FLOOR,...},"highest":N,"highest_scope":S}).

Tokens are etcd revisions. An etcd restored from a snapshot, or rebuilt
empty, hands out revisions below these floors, and every real holder is
refused as stale until the revision catches up. Restore with
'etcdutl snapshot restore --bump-revision B --mark-compacted' where B is
above the highest floor printed here (and 'coordctl sql floor --all' for
fenced databases); see docs/operations.md.`,
		Example: `  coordctl resource floors
  coordctl resource floors -w json --url http://127.0.0.1:7070`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runResourceClient(f, opts, func(c *fencing.Client) (fencing.FloorsResult, error) {
				res, err := c.Floors(cmd.Context())
				if res.Floors == nil {
					res.Floors = map[string]fencing.Token{} // {"floors":{}}, not null
				}
				return res, err
			})
		},
	}
	opts.addFlags(cmd)
	return cmd
}
