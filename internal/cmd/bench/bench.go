package benchcmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/bench/electbench"
	"github.com/coordkit/coordkit/internal/bench/labbench"
	"github.com/coordkit/coordkit/internal/bench/lockbench"
	"github.com/coordkit/coordkit/internal/bench/rwlockbench"
	"github.com/coordkit/coordkit/internal/bench/scalebench"
	"github.com/coordkit/coordkit/internal/bench/sembench"
	"github.com/coordkit/coordkit/internal/bench/sqlbench"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// NewCmd returns the command coordctl bench.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks that print tables",
		Long: `Benchmarks run side by side in one process and print tables: these machines
are shared and noisy, so compare within one run and quote ratios.

Every bench prints the same table: metric, one column per implementation,
unit, and ratio columns ("A better by": how many times better A did, for
a latency the other's value over A's, for a rate A's over the other's;
"A/B": A's value over B's as is). -w json prints one object per run,
{"benchmark":NAME,"rows":[...]}; each command's help gives its rows.`,
		Example: `  coordctl bench lab
  coordctl bench lab -w json`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	// Each command takes its harness (cli/cli's runF): tests pass one
	// that records the options it gets.
	cmd.AddCommand(newBenchLabCmd(f, labbench.Run))
	cmd.AddCommand(newBenchElectCmd(f, electbench.Run, electbench.RunRolling))
	cmd.AddCommand(newBenchLockCmd(f, lockbench.Run))
	cmd.AddCommand(newBenchSQLCmd(f, sqlbench.Run))
	cmd.AddCommand(newBenchScaleCmd(f, scalebench.Run))
	cmd.AddCommand(newBenchRWLockCmd(f, rwlockbench.Run))
	cmd.AddCommand(newBenchSemCmd(f, sembench.Run))
	return cmd
}

// runBench runs harness and prints its result (bench.Printed: as JSON the
// result, as text its table); its errors go through benchError.
func runBench[O any, R interface{ Table() bench.Table }](ctx context.Context, f *cmdutil.Factory, name string, errOptions error,
	harness func(context.Context, O) (R, error), opts O) error {
	res, err := harness(ctx, opts)
	if err != nil {
		return benchError(ctx, name, errOptions, err)
	}
	return cmdutil.PrintResult(f, bench.PrintedOf(res))
}

// benchError maps a harness's error: invalid options are usage errors,
// anything after an interrupt is "interrupted".
func benchError(ctx context.Context, name string, errOptions, err error) error {
	switch {
	case errors.Is(err, errOptions):
		return cmdutil.UsageErrorf("%v", err)
	case ctx.Err() != nil:
		return cmdutil.Mark(cmdutil.ErrFailed, fmt.Errorf("bench %s: interrupted", name))
	}
	return fmt.Errorf("bench %s: %w", name, err)
}
