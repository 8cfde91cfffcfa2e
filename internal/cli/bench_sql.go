package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/bench/sqlbench"
)

func newBenchSQLCmd(f *factory, harness func(context.Context, sqlbench.Options) (sqlbench.Result, error)) *cobra.Command {
	opts := sqlbench.Options{}
	cmd := &cobra.Command{
		Use:   "sql [--driver D --dsn DSN] [--fence do|doconn|both] [--iterations N] [--per-writer N] [--writers N] [--rounds N]",
		Short: "The cost of the fence check in a SQL database: with and without it",
		Long:  benchHelp("bench_sql"),
		Example: `  coordctl bench sql
  coordctl bench sql --driver postgres --dsn 'postgres://root@127.0.0.1:5432/test?sslmode=disable'
  coordctl bench sql --driver mysql --dsn 'root@tcp(127.0.0.1:3306)/test' -w json
  coordctl bench sql --driver postgres --dsn "$DB" --fence both`,
		Args: argsUsage(cobra.NoArgs),
		RunE: benchRunE(f, func(ctx context.Context, _ *cobra.Command) error {
			return runBenchSQL(ctx, f, opts, harness)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Driver, "driver", "sqlite", "database engine: sqlite, postgres or mysql (MariaDB too)")
	fl.StringVar(&opts.DSN, "dsn", "", "data source name, as for 'coordctl sql' (sqlite: a temporary file when empty)")
	fl.IntVar(&opts.Iterations, "iterations", 400, "transactions of the sequential writer, per side")
	fl.IntVar(&opts.PerWriter, "per-writer", 50, "transactions of each concurrent writer, per side and load")
	fl.IntVar(&opts.Writers, "writers", 16, "concurrent writers (2..64)")
	fl.IntVar(&opts.Rounds, "rounds", 4, "rounds per load, alternating which side goes first (at most --iterations and --per-writer)")
	fl.StringVar(&opts.Fence, "fence", sqlbench.FenceDo, "how the fenced side runs: do (sqlfence Do, database/sql's Tx: BEGIN, check, UPDATE, COMMIT), doconn (DoConn: BEGIN sent with the check), or both (Do in 'fenced', DoConn in 'fenced_conn', side by side)")
	return cmd
}

func runBenchSQL(ctx context.Context, f *factory, opts sqlbench.Options, harness func(context.Context, sqlbench.Options) (sqlbench.Result, error)) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if d, err := sqlfence.ParseDialect(opts.Driver); err == nil && opts.DSN != "" {
		if opts.DSN, err = sqlfence.NormalizeDSN(d, opts.DSN); err != nil {
			return usageErrorf("invalid --dsn: %v", err)
		}
	}
	shown := sqlfence.RedactDSN(opts.DSN)
	opts.Progress = f.IO.ErrOut
	res, err := harness(ctx, opts)
	if err != nil {
		err = benchError(ctx, "sql", sqlbench.ErrOptions, sqlfence.Scrub(err, opts.DSN))
		if shown != "" && exitCode(err) == exitError {
			return fmt.Errorf("%w (dsn %s)", err, shown)
		}
		return err
	}
	return p.Print(bench.Printed{Result: res, Tables: []bench.Table{res.Table()}})
}
