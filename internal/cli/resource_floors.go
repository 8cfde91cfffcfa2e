package cli

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/fencing"
)

type resourceFloorsResult struct{ fencing.FloorsResult }

func (r resourceFloorsResult) WriteSimple(w io.Writer) error {
	scopes := make([]string, 0, len(r.Floors))
	for s := range r.Floors {
		scopes = append(scopes, s)
	}
	sort.Strings(scopes)
	for _, s := range scopes {
		if _, err := fmt.Fprintf(w, "scope=%s floor=%d\n", s, r.Floors[s]); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "highest=%d scope=%s\n", r.Highest, r.HighestScope)
	return err
}

func newResourceFloorsCmd(f *factory) *cobra.Command {
	opts := &resourceClientOptions{}
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
			return runResourceFloors(cmd.Context(), f, opts)
		},
	}
	opts.addFlags(cmd)
	return cmd
}

func runResourceFloors(ctx context.Context, f *factory, opts *resourceClientOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	c, release, err := opts.client(f)
	if err != nil {
		return err
	}
	defer release()
	res, err := c.Floors(ctx)
	if err != nil {
		return err
	}
	if res.Floors == nil {
		res.Floors = map[string]fencing.Token{}
	}
	return p.Print(resourceFloorsResult{res})
}
