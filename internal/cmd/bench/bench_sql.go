package benchcmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/bench/sqlbench"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

func newBenchSQLCmd(f *cmdutil.Factory, harness func(context.Context, sqlbench.Options) (sqlbench.Result, error)) *cobra.Command {
	opts := sqlbench.Options{}
	cmd := &cobra.Command{
		Use:   "sql [--driver D --dsn DSN] [--fence do|doconn|both] [--recheck] [--iterations N] [--per-writer N] [--writers N] [--rounds N]",
		Short: "The cost of the fence check in a SQL database: with and without it",
		Long: `Measure, side by side in one run, the same small transaction — one UPDATE of
a business row — with the fence check of 'coordctl sql' first (package
fencing/sqlfence: every writer's token equals the floor, so the check is the
shared row lock, SELECT ... FOR SHARE; with --recheck the fence row is
also read again before COMMIT, as 'coordctl sql' does) and without it
(BEGIN, UPDATE, COMMIT), under three loads:

  sequential_*     one writer, --iterations transactions
  distinct_N_*     N (--writers) concurrent writers, each on its own scope
                   and its own business row, --per-writer transactions each
  shared_N_*       N concurrent writers on one scope and one business row;
                   all present the same token, so none is refused: the
                   figure is the cost of the check's row lock

Each load gives p50 and p99 latency of a transaction (ms) and transactions
per second; the loads run in rounds that alternate which side goes first.
The ratio column is fenced/unfenced as is: for a latency, how many times
slower the fenced transaction was.

The run creates two tables with random names (coordkit_bench_<hex>_rows and
coordkit_bench_<hex>_fence) in the database --dsn names and drops them at
the end; it needs CREATE TABLE there, not CREATE DATABASE. Without --dsn
(sqlite only) it works in a file in a temporary directory it removes. A
sqlite --dsn is handled as in 'coordctl sql' (IMMEDIATE transactions).
Afterwards it checks that the business rows count exactly the committed
transactions. Results go to stdout, progress to stderr. -w json prints
{"benchmark":"sql","driver","server","writers","fence","recheck","rows":[{"metric","fenced",
"unfenced","unit"}...]}.`,
		Example: `  coordctl bench sql
  coordctl bench sql --driver postgres --dsn 'postgres://root@127.0.0.1:5432/test?sslmode=disable'
  coordctl bench sql --driver mysql --dsn 'root@tcp(127.0.0.1:3306)/test' -w json
  coordctl bench sql --driver postgres --dsn "$DB" --fence both
  coordctl bench sql --driver postgres --dsn "$DB" --fence doconn --recheck`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, _ *cobra.Command, _ []string) error {
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
	fl.BoolVar(&opts.Recheck, "recheck", false, "fenced sides also read the fence row again before COMMIT (sqlfence.WithRecheck, as 'coordctl sql' does)")
	return cmd
}

func runBenchSQL(ctx context.Context, f *cmdutil.Factory, opts sqlbench.Options, harness func(context.Context, sqlbench.Options) (sqlbench.Result, error)) error {
	if d, err := sqlfence.ParseDialect(opts.Driver); err == nil && opts.DSN != "" {
		if opts.DSN, err = sqlfence.NormalizeDSN(d, opts.DSN); err != nil {
			return cmdutil.UsageErrorf("invalid --dsn: %v", err)
		}
	}
	shown := sqlfence.RedactDSN(opts.DSN)
	opts.Progress = f.IO.ErrOut
	res, err := harness(ctx, opts)
	if err != nil {
		err = benchError(ctx, "sql", sqlbench.ErrOptions, sqlfence.Scrub(err, opts.DSN))
		if shown != "" && cmdutil.ExitCode(err) == cmdutil.ExitError {
			return fmt.Errorf("%w (dsn %s)", err, shown)
		}
		return err
	}
	return cmdutil.PrintResult(f, bench.Printed{Result: res, Tables: []bench.Table{res.Table()}})
}
