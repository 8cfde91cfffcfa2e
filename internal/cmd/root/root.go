package root

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/coordkit/coordkit/internal/childproc"
	benchcmd "github.com/coordkit/coordkit/internal/cmd/bench"

	check "github.com/coordkit/coordkit/internal/cmd/check"

	scenariocmd "github.com/coordkit/coordkit/internal/cmd/scenario"

	democmd "github.com/coordkit/coordkit/internal/cmd/demo"

	version "github.com/coordkit/coordkit/internal/cmd/version"

	claimcmd "github.com/coordkit/coordkit/internal/cmd/claim"

	etcdcmd "github.com/coordkit/coordkit/internal/cmd/etcd"

	lamportcmd "github.com/coordkit/coordkit/internal/cmd/lamport"

	lab "github.com/coordkit/coordkit/internal/cmd/lab"

	sqlcli "github.com/coordkit/coordkit/internal/cmd/sql"

	resource "github.com/coordkit/coordkit/internal/cmd/resource"

	sidecarcmd "github.com/coordkit/coordkit/internal/cmd/sidecar"

	agentcmd "github.com/coordkit/coordkit/internal/cmd/agent"

	electcmd "github.com/coordkit/coordkit/internal/cmd/elect"

	semcmd "github.com/coordkit/coordkit/internal/cmd/sem"

	lockcmd "github.com/coordkit/coordkit/internal/cmd/lock"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/primitive"
)

// Main runs coordctl with the process's arguments and streams and returns
// its exit code.
func Main() int {
	if len(os.Args) > 1 && os.Args[1] == childproc.WatchdogArg {
		return childproc.WatchdogMain(os.Args[2:])
	}
	f := cmdutil.NewFactory(cmdutil.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	// A command under a hold runs below this binary's watchdog mode.
	if exe, err := os.Executable(); err == nil {
		f.Watchdog = exe
	}
	return runFactory(context.Background(), f, os.Args[1:])
}

// run executes one coordctl invocation; tests call it in-process.
func run(ctx context.Context, args []string, streams cmdutil.IOStreams, getenv func(string) string) int {
	f := cmdutil.NewFactory(streams)
	f.Getenv = getenv
	return runFactory(ctx, f, args)
}

// runFactory is run on a factory the caller made (tests replace its parts).
func runFactory(ctx context.Context, f *cmdutil.Factory, args []string) int {
	streams := f.IO
	root := newRootCmd(f, f.Getenv)
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
		fmt.Fprintf(streams.ErrOut, "coordctl: %v%s\n", err, hint(cmd, err))
	}
	if code == cmdutil.ExitUsage && cmd != nil {
		// The usage line and where to read more; the whole help is --help's.
		fmt.Fprintf(streams.ErrOut, "Usage: %s\nSee '%s --help' for the flags and examples.\n", cmd.UseLine(), cmd.CommandPath())
	}
	return code
}

// hint explains errors whose own text does not say what to do: a stale
// token below a floor etcd never granted (a restored etcd:
// resource.RestoreHint), and a deadline of a command that asks etcd (it has
// --endpoints), which is etcd's silence; another command's deadline
// (resource put, the lab) says nothing of etcd.
func hint(cmd *cobra.Command, err error) string {
	if h := resource.RestoreHint(err); h != "" {
		return h
	}
	switch kind, ok := primitive.NameTakenBy(err); {
	case ok && kind == primitive.KindSemaphore:
		return " (use coordctl sem, or coordctl sem delete to free the name)"
	case ok:
		return " (use coordctl lock, or see coordctl lock status)"
	}
	asksEtcd := cmd != nil && asksEtcd(cmd)
	if asksEtcd && errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "quorum") {
		return " (etcd did not answer within --command-timeout: the cluster may have lost its quorum or be unreachable)"
	}
	return ""
}

// asksEtcd reports whether cmd talks to etcd to do its work: it has
// --endpoints, and not only to explain a stale refusal.
func asksEtcd(cmd *cobra.Command) bool {
	return cmd.Flags().Lookup("endpoints") != nil && cmd.Annotations[cmdutil.EtcdForHintsAnnotation] == ""
}

func newRootCmd(f *cmdutil.Factory, getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:   "coordctl",
		Short: "Fenced locks, leader election and a Raft lab on etcd",
		Long: `coordctl wraps etcd leases, elections and mutexes so that every holder gets a
fencing token that the protected resource checks, and runs a Raft lab in
which you can see what quorums, partitions and linearizable reads cost.

Commands that talk to etcd use --endpoints (default 127.0.0.1:2379, or
$COORDCTL_ENDPOINTS). Start an embedded etcd with 'coordctl etcd'.

Exit codes: 0 ok, 1 error, 2 usage, 3 not acquired, 4 lost while holding,
5 rejected as stale by fencing, 6 outcome unknown (a write may have been
committed: look before retrying). In exec modes the child's code passes through.`,
		Example: `  coordctl etcd --data-dir /tmp/etcd &
  coordctl lock jobs/nightly -- ./nightly.sh
  coordctl resource serve --data-dir /tmp/res &`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return f.ValidateGlobal(asksEtcd(cmd))
		},
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

	root.AddCommand(etcdcmd.NewCmd(f))
	root.AddCommand(democmd.NewCmd(f))
	root.AddCommand(sidecarcmd.NewCmd(f))
	root.AddCommand(agentcmd.NewCmd(f))
	root.AddCommand(resource.NewCmd(f))
	root.AddCommand(lamportcmd.NewCmd(f))
	root.AddCommand(claimcmd.NewCmd(f))
	root.AddCommand(lockcmd.NewCmd(f))
	root.AddCommand(semcmd.NewCmd(f))
	root.AddCommand(scenariocmd.NewCmd(f))
	root.AddCommand(lab.NewCmd(f))
	root.AddCommand(benchcmd.NewCmd(f))
	root.AddCommand(electcmd.NewCmd(f))
	root.AddCommand(check.NewCmd(f))
	root.AddCommand(sqlcli.NewCmd(f))
	root.AddCommand(version.NewCmd(f))
	rejectUnknownSubcommands(root)
	return root
}

// rejectUnknownSubcommands makes every command group (a command with
// subcommands that takes no arguments of its own) answer an unknown
// subcommand with a usage error naming the closest ones, also when flags
// follow it; cobra would print the help and exit 0, or complain about the
// flags. A group without a subcommand still prints its help.
func rejectUnknownSubcommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		rejectUnknownSubcommands(sub)
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

const groupAnnotation = "coordctl/group"
