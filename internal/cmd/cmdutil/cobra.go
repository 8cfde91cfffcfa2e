package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// ExecAnnotation marks a command that has subcommands and also runs a
// command given after "--" (sidecar): its own Args check stays.
const ExecAnnotation = "coordctl/exec"

// UnknownCommand is the usage error for an unknown subcommand of group.
func UnknownCommand(group *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, group.CommandPath())
	if group.SuggestionsMinimumDistance <= 0 {
		group.SuggestionsMinimumDistance = 2
	}
	if s := group.SuggestionsFor(name); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %s?", strings.Join(s, " or "))
	}
	return &UsageError{Err: errors.New(msg)}
}

// ArgsUsage wraps a cobra positional-args validator so its errors are usage errors.
func ArgsUsage(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return &UsageError{Err: err}
		}
		return nil
	}
}

// PrintResult prints v through the -w printer, for a command that prints
// once it is done. -w was checked before the command ran (ValidateGlobal).
func PrintResult(f *Factory, v any) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	return p.Print(v)
}

// SignalRunE is the RunE of a command that runs until done or
// interrupted: run gets a context that f.NotifyContext's signals cancel.
func SignalRunE(f *Factory, run func(ctx context.Context, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx, cancel := f.NotifyContext(cmd.Context())
		defer cancel()
		return run(ctx, cmd, args)
	}
}
