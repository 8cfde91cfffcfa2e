package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/bench"
)

func newBenchCmd(f *factory) *cobra.Command {
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
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newBenchLabCmd(f))
	cmd.AddCommand(newBenchElectCmd(f))
	cmd.AddCommand(newBenchLockCmd(f))
	cmd.AddCommand(newBenchSQLCmd(f))
	cmd.AddCommand(newBenchScaleCmd(f))
	cmd.AddCommand(newBenchRWLockCmd(f))
	cmd.AddCommand(newBenchSemCmd(f))
	return cmd
}

// benchOutput prints a harness's result: as JSON, the result itself (its
// contract); as text, its table in the layout every bench shares.
type benchOutput struct {
	result any
	table  bench.Table
}

func (o benchOutput) MarshalJSON() ([]byte, error) { return json.Marshal(o.result) }

func (o benchOutput) WriteSimple(w io.Writer) error { return bench.WriteTable(w, o.table) }

// benchError maps a harness's error: invalid options are usage errors,
// anything after an interrupt is "interrupted".
func benchError(ctx context.Context, name string, errOptions, err error) error {
	switch {
	case errors.Is(err, errOptions):
		return usageErrorf("%v", err)
	case ctx.Err() != nil:
		return mark(errFailed, fmt.Errorf("bench %s: interrupted", name))
	}
	return fmt.Errorf("bench %s: %w", name, err)
}
