package root

import (
	"context"

	benchcmd "github.com/coordkit/coordkit/internal/cmd/bench"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil/program"

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
	return program.Main(func(f *cmdutil.Factory) *cobra.Command { return newRootCmd(f, f.Getenv) }, hint)
}

// run executes one coordctl invocation; tests call it in-process.
func run(ctx context.Context, args []string, streams cmdutil.IOStreams, getenv func(string) string) int {
	f := cmdutil.NewFactory(streams)
	f.Getenv = getenv
	return runFactory(ctx, f, args)
}

// runFactory is run on a factory the caller made (tests replace its parts).
func runFactory(ctx context.Context, f *cmdutil.Factory, args []string) int {
	return program.Execute(ctx, f, newRootCmd(f, f.Getenv), args, hint)
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
	return program.EtcdDeadlineHint(cmd, err)
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
	}
	program.SetUpRoot(f, root)

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
	program.RejectUnknownSubcommands(root)
	return root
}
