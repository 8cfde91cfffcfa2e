// sql fence and sql floor: a scope's fence row, raised or read, without a write.

package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/fencing/sqlfence"
)

func newSQLFenceCmd(f *factory) *cobra.Command {
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
			return runSQLFence(ctx, f, opts)
		},
	}
	opts.addConnFlags(cmd)
	opts.addScopeFlag(cmd, f)
	opts.addTokenFlag(cmd, f)
	return cmd
}

func newSQLFloorCmd(f *factory) *cobra.Command {
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
			if all {
				if cmd.Flags().Changed("scope") {
					return usageErrorf("--all and --scope exclude each other")
				}
			}
			return runSQLFloor(ctx, f, opts, all)
		},
	}
	opts.addConnFlags(cmd)
	opts.addScopeFlag(cmd, f)
	cmd.Flags().BoolVar(&all, "all", false, "print the highest floor of all scopes (to choose etcd's --bump-revision after a restore)")
	return cmd
}

// sqlFenceResult drops rows_affected from the JSON of 'sql fence'.
type sqlFenceResult struct {
	Scope   string        `json:"scope"`
	Token   fencing.Token `json:"token"`
	Floor   fencing.Token `json:"floor"`
	Outcome string        `json:"outcome"`
}

func (r sqlFenceResult) WriteSimple(w io.Writer) error {
	return sqlResult{Scope: r.Scope, Token: r.Token, Floor: r.Floor, fenceOnly: true}.WriteSimple(w)
}

type sqlFloorResult struct {
	Scope string        `json:"scope"`
	Floor fencing.Token `json:"floor"`
}

// WriteSimple prints the floor alone, for scripts.
func (r sqlFloorResult) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintln(w, r.Floor)
	return err
}

func runSQLFence(ctx context.Context, f *factory, opts *sqlOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	d, dsn, tok, err := opts.validate(true)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	c, err := opts.connect(ctx, d, dsn)
	if err != nil {
		return err
	}
	defer c.close()
	if err := c.fence.Fence(ctx, opts.Scope, tok); err != nil {
		return c.doErr(ctx, p, opts.Scope, tok, err)
	}
	return p.Print(sqlFenceResult{Scope: opts.Scope, Token: tok, Floor: tok, Outcome: outcomeCommitted})
}

// runSQLFloor prints the floor of --scope, or with all the highest floor
// of every scope and its scope.
func runSQLFloor(ctx context.Context, f *factory, opts *sqlOptions, all bool) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	var d sqlfence.Dialect
	var dsn string
	if all {
		d, dsn, err = opts.validateConn()
	} else {
		d, dsn, _, err = opts.validate(false)
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	c, err := opts.connect(ctx, d, dsn)
	if err != nil {
		return err
	}
	defer c.close()
	scope, floor := opts.Scope, fencing.Token(0)
	if all {
		scope, floor, err = c.fence.HighestFloor(ctx)
	} else {
		floor, err = c.fence.Floor(ctx, opts.Scope)
	}
	if err != nil {
		return fmt.Errorf("%s at %s: %w", d, c.shown, c.timeoutErr(ctx, err))
	}
	return p.Print(sqlFloorResult{Scope: scope, Floor: floor})
}
