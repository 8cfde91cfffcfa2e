package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/primitive"
)

// Main runs coordctl with the process's arguments and streams and returns
// its exit code.
func Main() int {
	return run(context.Background(), os.Args[1:], ioStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Getenv)
}

// run executes one coordctl invocation; tests call it in-process.
func run(ctx context.Context, args []string, streams ioStreams, getenv func(string) string) int {
	f := newFactory(streams)
	f.Getenv = getenv
	return runFactory(ctx, f, args)
}

// runFactory is run on a factory the caller made (tests replace its parts).
func runFactory(ctx context.Context, f *factory, args []string) int {
	streams := f.IO
	root := newRootCmd(f, f.Getenv)
	root.SetArgs(args)
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	code := exitCode(err)
	if !silent(err) && !(code == exitOK && errors.Is(err, context.Canceled)) {
		fmt.Fprintf(streams.ErrOut, "coordctl: %v%s\n", err, hint(cmd, err))
	}
	if code == exitUsage && cmd != nil {
		// The usage line and where to read more; the whole help is --help's.
		fmt.Fprintf(streams.ErrOut, "Usage: %s\nSee '%s --help' for the flags and examples.\n", cmd.UseLine(), cmd.CommandPath())
	}
	return code
}

// restoreGap is how far below the floor a refused token must be for the
// refusal to name a restored etcd as the likely cause. A predecessor's
// token lags the floor by the etcd writes made while the two overlapped;
// an etcd restored from a snapshot lags by every write since the snapshot.
// The figure is a heuristic: the hint says "if".
const restoreGap = 1000

// hint explains errors whose own text does not say what to do: a stale
// token far below the floor (a restored etcd), and a deadline of a command
// that asks etcd (it has --endpoints), which is etcd's silence; another
// command's deadline (resource put, the lab) says nothing of etcd.
func hint(cmd *cobra.Command, err error) string {
	var se *fencing.StaleError
	if errors.As(err, &se) && se.Floor > se.Token && se.Floor-se.Token > restoreGap {
		return fmt.Sprintf(" (token %d is %d below the floor, far more than a predecessor's usually is: "+
			"if etcd was restored from a snapshot or rebuilt, its revisions restarted below the floors; "+
			"restore it with 'etcdutl snapshot restore --bump-revision N --mark-compacted', N above the highest floor "+
			"('coordctl resource floors', 'coordctl sql floor --all'); see docs/operations.md)", se.Token, se.Floor-se.Token)
	}
	switch kind, ok := primitive.NameTakenBy(err); {
	case ok && kind == primitive.KindSemaphore:
		return " (use coordctl sem, or coordctl sem delete to free the name)"
	case ok:
		return " (use coordctl lock, or see coordctl lock status)"
	}
	asksEtcd := cmd != nil && cmd.Flags().Lookup("endpoints") != nil
	if asksEtcd && errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "quorum") {
		return " (etcd did not answer within --command-timeout: the cluster may have lost its quorum or be unreachable)"
	}
	return ""
}

func newRootCmd(f *factory, getenv func(string) string) *cobra.Command {
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
			return f.validateGlobal(cmd.Flags().Lookup("endpoints") != nil)
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		// "coordctl resource puut --token 5": the flags belong to a
		// subcommand that does not exist; say so, not "unknown flag".
		if cmd.Annotations[groupAnnotation] != "" && len(cmd.Flags().Args()) > 0 {
			return unknownCommand(cmd, cmd.Flags().Args()[0])
		}
		return &usageError{err: err}
	})

	root.PersistentFlags().StringVarP(&f.Global.WriteOut, "write-out", "w", formatSimple, "output format: simple or json")

	root.AddCommand(newEtcdCmd(f))
	root.AddCommand(newDemoCmd(f))
	root.AddCommand(newSidecarCmd(f))
	root.AddCommand(newResourceCmd(f))
	root.AddCommand(newLamportCmd(f))
	root.AddCommand(newClaimCmd(f))
	root.AddCommand(newLockCmd(f))
	root.AddCommand(newSemCmd(f))
	root.AddCommand(newScenarioCmd(f))
	root.AddCommand(newLabCmd(f))
	root.AddCommand(newBenchCmd(f))
	root.AddCommand(newElectCmd(f))
	root.AddCommand(newCheckCmd(f))
	root.AddCommand(newSQLCmd(f))
	root.AddCommand(newVersionCmd(f))
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
	if !cmd.HasSubCommands() || (cmd.Args != nil && cmd.Args(cmd, []string{"x"}) == nil) || cmd.Annotations[execAnnotation] != "" {
		return // a leaf, or a command that takes arguments itself (claim NAME, sidecar -- CMD)
	}
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return unknownCommand(cmd, args[0])
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

// execAnnotation marks a command that has subcommands and also runs a
// command given after "--" (sidecar): its own Args check stays.
const execAnnotation = "coordctl/exec"

// unknownCommand is the usage error for an unknown subcommand of group.
func unknownCommand(group *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, group.CommandPath())
	if group.SuggestionsMinimumDistance <= 0 {
		group.SuggestionsMinimumDistance = 2
	}
	if s := group.SuggestionsFor(name); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %s?", strings.Join(s, " or "))
	}
	return &usageError{err: errors.New(msg)}
}

// argsUsage wraps a cobra positional-args validator so its errors are usage errors.
func argsUsage(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return &usageError{err: err}
		}
		return nil
	}
}

// printResult prints v through the -w printer, for a command that prints
// once it is done. -w was checked before the command ran (validateGlobal).
func printResult(f *factory, v any) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	return p.Print(v)
}

// signalRunE is the RunE of a command that runs until done or
// interrupted: run gets a context that f.NotifyContext's signals cancel.
func signalRunE(f *factory, run func(ctx context.Context, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx, cancel := f.NotifyContext(cmd.Context())
		defer cancel()
		return run(ctx, cmd, args)
	}
}
