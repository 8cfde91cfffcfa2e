package cli

import "github.com/spf13/cobra"

func newBenchCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks that print tables",
		Long: `Benchmarks run side by side in one process and print tables: these machines
are shared and noisy, so compare within one run and quote ratios.`,
		Example: `  coordctl bench lab
  coordctl bench lab -w json`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newBenchLabCmd(f))
	cmd.AddCommand(newBenchElectCmd(f))
	cmd.AddCommand(newBenchLockCmd(f))
	return cmd
}
