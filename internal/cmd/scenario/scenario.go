package scenariocmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/scenarios"
	"github.com/coordkit/coordkit/scenarios/report"
)

// NewCmd returns the command coordctl scenario.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenario",
		Short: "Run experiments that check what theory predicts",
		Long: `Each scenario turns a claim coordkit teaches into an experiment that runs in
seconds: it reports, for every claim, what theory predicts next to what the
run observed and whether the prediction held, with the numbers behind it
and a picture (a timeline of the nodes, fault windows and operations, and
latency charts).

'scenario list' names them; 'scenario run NAME' runs one, 'scenario run
--all' runs every one. The exit code is 0 when every claim holds and 1
otherwise. Scenarios that need etcd start an embedded member of their own
unless --endpoints is given explicitly.`,
		Example: `  coordctl scenario list
  coordctl scenario run lamport-clocks
  coordctl scenario run lock-without-fencing --report fencing.html
  coordctl scenario run --all --scale small -w json`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newScenarioListCmd(f), newScenarioRunCmd(f))
	return cmd
}

func newScenarioListCmd(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the scenarios",
		Long: `List every scenario with a one-line summary. With -w json: one array of
{"name","summary"}.`,
		Example: `  coordctl scenario list
  coordctl scenario list -w json | jq -r '.[].name'`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := scenarios.Default()
			if err != nil {
				return err
			}
			return cmdutil.PrintResult(f, cmdutil.TextOutput{V: reg.Listing()})
		},
	}
}

type scenarioRunOptions struct {
	Name      string
	All       bool
	Seed      int64
	Scale     string
	Report    string // HTML file to write; "" for none
	Endpoints []string
	// SQLDriver and SQLDSN are fenced-sql's database (SQLite in the run's
	// directory when empty).
	SQLDriver string
	SQLDSN    string
	Redis     string // a Redis server for lock-without-fencing's Redis round; "" for the model
	// Registry supplies the scenarios; scenarios.Default when nil.
	Registry *scenarios.Registry
}

func newScenarioRunCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &scenarioRunOptions{}
	cmd := &cobra.Command{
		Use:   "run NAME | --all",
		Short: "Run a scenario (or all) and report each claim's verdict",
		Long: `Run the scenario NAME, or every scenario with --all, and print its report:
the verdict of each claim (theory's prediction next to the observation),
metrics, tables, a character picture of the timeline and the chart data.
Progress goes to stderr.

--report FILE.html also writes a self-contained HTML page (inline CSS and
SVG, no script, nothing fetched from the network) with the timeline (the
role of each node over time, fault windows shaded, each operation's
outcome) and the charts.

--seed fixes every random choice (fault schedules, jitter), so a run can be
replayed; timings still vary with the machine. --scale small runs in
seconds; --scale full runs longer and gives figures worth quoting.

--redis ADDR plays lock-without-fencing's Redis round on the Redis server
at ADDR with a real Redis lock (redsync over go-redis; keys under a random
prefix, deleted at the end) instead of a model of one; the report says
which it used. An ADDR nobody answers on within 3s fails that scenario.

With -w json: one object {"name","passed","seed","scale","elapsed_ms",
"claims":[{"claim","expected","observed","holds"}],"metrics":{...},...};
with --all one array of those.

Exit 0 when every claim of every scenario run holds, 1 otherwise (also when
an experiment could not be carried out), 2 for an unknown scenario name.

fenced-sql runs on SQLite in a temporary file unless --driver postgres|mysql
and --dsn name a database; it creates two tables with random names there
(coordkit_scn_*) and drops them at the end. advisory-lock needs PostgreSQL
(--driver postgres --dsn DSN: a PostgreSQL advisory lock whose lock
connection's session the server ends, the lost update, the sequence token
fenced); without it the scenario is SKIPPED, which is not a failure.`,
		Example: `  coordctl scenario run lamport-clocks
  coordctl scenario run lamport-uniqueness --seed 7 -w json
  coordctl scenario run lock-without-fencing --report /tmp/fencing.html
  coordctl scenario run lock-without-fencing --redis 127.0.0.1:6379
  coordctl scenario run --all --report /tmp/all.html
  coordctl scenario run fenced-sql --driver postgres --dsn postgres://app@db/app
  coordctl scenario run advisory-lock --driver postgres --dsn postgres://app@db/app`,
		Args: cmdutil.ArgsUsage(cobra.MaximumNArgs(1)),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			if fl := cmd.Flag("endpoints"); fl != nil && fl.Changed {
				opts.Endpoints = f.Global.SplitEndpoints()
			}
			return runScenarioRun(ctx, f, opts)
		}),
	}
	f.AddEndpointFlags(cmd.Flags())
	cmd.Flags().BoolVar(&opts.All, "all", false, "run every scenario")
	cmd.Flags().Int64Var(&opts.Seed, "seed", 1, "seed of every random choice, for replay")
	cmd.Flags().StringVar(&opts.Scale, "scale", string(scenarios.ScaleSmall), "size of the run: small or full")
	cmd.Flags().StringVar(&opts.Report, "report", "", "also write a self-contained HTML report to this file")
	cmd.Flags().StringVar(&opts.SQLDriver, "driver", "", "fenced-sql's and advisory-lock's database: sqlite (default), postgres or mysql (advisory-lock: postgres only)")
	cmd.Flags().StringVar(&opts.SQLDSN, "dsn", "", "fenced-sql's data source name (see 'coordctl sql --help'); default a temporary SQLite file")
	cmd.Flags().StringVar(&opts.Redis, "redis", "", "a Redis server (host:port): lock-without-fencing plays its Redis round with redsync on it instead of a model")
	return cmd
}

func runScenarioRun(ctx context.Context, f *cmdutil.Factory, opts *scenarioRunOptions) error {
	reg := opts.Registry
	var err error
	if reg == nil {
		if reg, err = scenarios.Default(); err != nil {
			return err
		}
	}
	scale, err := scenarios.ParseScale(opts.Scale)
	if err != nil {
		return cmdutil.UsageErrorf("invalid --scale %q: want small or full", opts.Scale)
	}
	names, err := reg.Select(opts.Name, opts.All)
	switch {
	case errors.Is(err, scenarios.ErrNameAndAll):
		return cmdutil.UsageErrorf("give a scenario name or --all, not both")
	case errors.Is(err, scenarios.ErrNoName):
		return cmdutil.UsageErrorf("give a scenario name or --all; scenarios are: %s", strings.Join(reg.Names(), ", "))
	case err != nil:
		return cmdutil.UsageErrorf("%v", err)
	}
	env := scenarios.Env{Seed: opts.Seed, Scale: scale, EtcdEndpoints: opts.Endpoints, StartEtcd: etcdembed.Scratch,
		SQLDriver: opts.SQLDriver, SQLDSN: opts.SQLDSN, Redis: opts.Redis}
	var sqlErr *scenarios.SQLError
	switch err := env.Validate(); {
	case errors.Is(err, scenarios.ErrSQLNeedsDriver):
		return cmdutil.UsageErrorf("--dsn needs --driver")
	case errors.Is(err, scenarios.ErrSQLNeedsDSN) && errors.As(err, &sqlErr):
		return cmdutil.UsageErrorf("--driver %s needs --dsn", sqlErr.Dialect)
	case errors.As(err, &sqlErr) && sqlErr.Field == "driver":
		return cmdutil.UsageErrorf("invalid --driver %q: want sqlite, postgres or mysql", opts.SQLDriver)
	case errors.As(err, &sqlErr):
		return cmdutil.UsageErrorf("invalid --dsn: %v", sqlErr.Err)
	case err != nil:
		return cmdutil.UsageErrorf("%v", err)
	}
	if opts.Report != "" && !strings.HasSuffix(strings.ToLower(opts.Report), ".html") && !strings.HasSuffix(strings.ToLower(opts.Report), ".htm") {
		return cmdutil.UsageErrorf("invalid --report %q: want a .html file", opts.Report)
	}

	if len(opts.Endpoints) > 0 {
		// Fail within --dial-timeout, saying why, rather than after each
		// scenario's own attempts.
		cli, err := f.EtcdClient(ctx)
		if err != nil {
			return err
		}
		_ = cli.Close()
	}

	reports, err := reg.RunAll(ctx, names, env, f.IO.ErrOut)
	if err != nil {
		return cmdutil.Mark(cmdutil.ErrFailed, err)
	}
	if opts.Report != "" {
		if err := report.WriteHTMLFile(opts.Report, reports); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "report written to %s\n", opts.Report)
	}

	res := report.Results{Reports: reports, All: opts.All}
	if err := cmdutil.PrintResult(f, cmdutil.TextOutput{V: res}); err != nil {
		return err
	}
	if failed := res.Failed(); len(failed) > 0 {
		return fmt.Errorf("%d of %d scenarios failed: %s", len(failed), len(reports), strings.Join(failed, ", "))
	}
	return nil
}
