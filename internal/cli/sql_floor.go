// sql fence and sql floor: a scope's fence row, raised or read, without a write.

package cli

import (
	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/sqlcmd"
)

func newSQLFenceCmd(f *factory, run sqlRunF) *cobra.Command {
	opts := &sqlOptions{}
	cmd := &cobra.Command{
		Use:   "fence --driver D --dsn DSN [--scope S] [--token T]",
		Short: "Raise a scope's floor in the database to a token, without other writes",
		Long: `Run the fence check alone: the scope's floor rises to --token, so that
from now on every lower token is refused. A new holder fences before its
first write, closing the window in which its predecessor could still write.
Exit 5 when the token is below the floor already (nothing changed), 6 when
the answer to COMMIT was lost (the floor may have risen), 1 on any other
error, 2 for bad flags. Give it only a token a lock or election gave
you: a made-up high token would make every later real holder's write exit 5. Prints 'ok scope=S token=T floor=F'; with -w
json {"scope","token","floor"}.

` + sqlLong,
		Example: `  # a new holder fences before its first write; token and scope come from the lock
  coordctl lock jobs/report -- sh -c 'coordctl sql fence --driver postgres --dsn "$DB" && ./job.sh'
  coordctl lock jobs/report -- coordctl sql fence --driver sqlite --dsn /var/lib/app/app.db`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := f.NotifyContext(cmd.Context())
			defer cancel()
			return runSQL(ctx, f, run, opts, sqlcmd.Request{Op: sqlcmd.Fence})
		},
	}
	opts.addConnFlags(cmd)
	opts.addScopeFlag(cmd, f)
	opts.addTokenFlag(cmd, f)
	return cmd
}

func newSQLFloorCmd(f *factory, run sqlRunF) *cobra.Command {
	opts := &sqlOptions{}
	var all bool
	cmd := &cobra.Command{
		Use:   "floor --driver D --dsn DSN (--scope S | --all)",
		Short: "Print a scope's floor: the highest token the database admitted",
		Long: `Print the floor of --scope in the fence table: the highest token admitted,
0 if none. It is a plain read, outdated as soon as it is printed; the
decision belongs to 'coordctl sql'. With -w json {"scope","floor"}.

--all prints the highest floor of every scope (and, with -w json, its
scope): after etcd is restored from a snapshot or rebuilt, its revision must
be bumped above it ('etcdutl snapshot restore --bump-revision N
--mark-compacted', docs/operations.md).

` + sqlLong,
		Example: `  coordctl sql floor --driver sqlite --dsn /var/lib/app/app.db --scope jobs/report
  coordctl sql floor --driver postgres --dsn "$DB" --scope jobs/report -w json
  coordctl sql floor --driver postgres --dsn "$DB" --all   # the highest floor of all scopes`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := f.NotifyContext(cmd.Context())
			defer cancel()
			if !all {
				return runSQL(ctx, f, run, opts, sqlcmd.Request{Op: sqlcmd.Floor})
			}
			if cmd.Flags().Changed("scope") {
				return usageErrorf("--all and --scope exclude each other")
			}
			return runSQL(ctx, f, run, opts, sqlcmd.Request{Op: sqlcmd.HighestFloor})
		},
	}
	opts.addConnFlags(cmd)
	opts.addScopeFlag(cmd, f)
	cmd.Flags().BoolVar(&all, "all", false, "print the highest floor of all scopes (to choose etcd's --bump-revision after a restore)")
	return cmd
}
