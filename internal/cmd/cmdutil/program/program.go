// Package program is what a binary's root command does around its tree,
// for coordctl (internal/cmd/root) and coordkit-sidecar
// (internal/cmd/sidecarroot) alike: the checks before a command runs,
// unknown subcommands, and the one place an error becomes a message and an
// exit code (SetUpRoot, RejectUnknownSubcommands, Execute, Main).
package program

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/childproc"
)

// groupAnnotation marks a command group that RejectUnknownSubcommands
// made answer an unknown subcommand with a usage error.
const groupAnnotation = "coordctl/group"

// SetUpRoot makes root the top of a binary's tree on f: -w, the global
// checks before every command (f.ValidateGlobal, the etcd flags only for
// a command that asks etcd), flag errors as usage errors, and unknown
// subcommands rejected (RejectUnknownSubcommands; call it after the
// commands are added: SetUpRoot adds -w, so call SetUpRoot first and
// RejectUnknownSubcommands last).
func SetUpRoot(f *cmdutil.Factory, root *cobra.Command) {
	root.SilenceUsage = true
	root.SilenceErrors = true
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		return f.ValidateGlobal(AsksEtcd(cmd))
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		// "coordctl resource puut --token 5": the flags belong to a
		// subcommand that does not exist; say so, not "unknown flag".
		if cmd.Annotations[groupAnnotation] != "" && len(cmd.Flags().Args()) > 0 {
			return cmdutil.UnknownCommand(cmd, cmd.Flags().Args()[0])
		}
		return &cmdutil.UsageError{Err: err}
	})
	root.PersistentFlags().StringVarP(&f.Global.WriteOut, "write-out", "w", cmdutil.FormatSimple, "output format: simple or json")
}

// AsksEtcd reports whether cmd talks to etcd to do its work: it has
// --endpoints, and not only to explain a stale refusal.
func AsksEtcd(cmd *cobra.Command) bool {
	return cmd.Flags().Lookup("endpoints") != nil && cmd.Annotations[cmdutil.EtcdForHintsAnnotation] == ""
}

// EtcdDeadlineHint explains a deadline of a command that asks etcd: it is
// etcd's silence. Another command's deadline says nothing of etcd: "".
func EtcdDeadlineHint(cmd *cobra.Command, err error) string {
	if cmd != nil && AsksEtcd(cmd) && errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "quorum") {
		return cmdutil.EtcdSilentHint
	}
	return ""
}

// Execute runs root with args on f's streams and returns the exit code
// (cmdutil.ExitCode's table). An error is printed once, as "NAME: ERROR" and the
// hint's explanation (hint may be nil), and a usage error with the
// command's usage line and where to read more.
func Execute(ctx context.Context, f *cmdutil.Factory, root *cobra.Command, args []string, hint func(*cobra.Command, error) string) int {
	streams := f.IO
	root.SetArgs(args)
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return cmdutil.ExitOK
	}
	code := cmdutil.ExitCode(err)
	if !cmdutil.Silent(err) && !(code == cmdutil.ExitOK && errors.Is(err, context.Canceled)) {
		h := ""
		if hint != nil {
			h = hint(cmd, err)
		}
		fmt.Fprintf(streams.ErrOut, "%s: %v%s\n", root.Name(), err, h)
	}
	if code == cmdutil.ExitUsage && cmd != nil {
		// The usage line and where to read more; the whole help is --help's.
		fmt.Fprintf(streams.ErrOut, "Usage: %s\nSee '%s --help' for the flags and examples.\n", cmd.UseLine(), cmd.CommandPath())
	}
	return code
}

// RejectUnknownSubcommands makes every command group (a command with
// subcommands that takes no arguments of its own) answer an unknown
// subcommand with a usage error naming the closest ones, also when flags
// follow it; cobra would print the help and exit 0, or complain about the
// flags. A group without a subcommand still prints its help.
func RejectUnknownSubcommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		RejectUnknownSubcommands(sub)
	}
	if !cmd.HasSubCommands() || (cmd.Args != nil && cmd.Args(cmd, []string{"x"}) == nil) || cmd.Annotations[cmdutil.ExecAnnotation] != "" {
		return // a leaf, or a command that takes arguments itself (claim NAME, sidecar -- CMD)
	}
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return cmdutil.UnknownCommand(cmd, args[0])
		}
		return nil
	}
	if !cmd.Runnable() {
		cmd.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
	}
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[groupAnnotation] = "true"
}

// Main runs a binary whose tree newRoot builds with the process's
// arguments and streams and returns its exit code. A binary that runs
// commands under a hold is also their watchdog (childproc): called with
// childproc.WatchdogArg it is that, and nothing else.
func Main(newRoot func(*cmdutil.Factory) *cobra.Command, hint func(*cobra.Command, error) string) int {
	if len(os.Args) > 1 && os.Args[1] == childproc.WatchdogArg {
		return childproc.WatchdogMain(os.Args[2:])
	}
	f := cmdutil.NewFactory(cmdutil.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	// A command under a hold runs below this binary's watchdog mode.
	f.Watchdog = childproc.Self()
	return Execute(context.Background(), f, newRoot(f), os.Args[1:], hint)
}
