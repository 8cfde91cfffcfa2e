package electcmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/childproc"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil/hold"
	"github.com/coordkit/coordkit/internal/report"
	"github.com/coordkit/coordkit/session"
)

// NewCmd returns the command coordctl elect.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &electOptions{}
	cmd := &cobra.Command{
		Use:   "elect NAME [PROPOSAL] [--id ID] [--ttl D] [--prefix P] [--kill-grace D] [-- COMMAND [ARGS...]] | elect NAME --observe",
		Short: "Campaign for leadership of an election, or watch who leads",
		Long: `Campaign in the election NAME on etcd and hold the leadership once won.
Candidates are served in the order they arrived. The value a candidate
proclaims is PROPOSAL, or --id, or hostname-pid. The fencing token is the
create revision of the leader's key; it grows from leader to leader.

Keys are laid out as etcd's concurrency.Election lays them out (NAME/<lease
hex>), so 'coordctl elect' and 'etcdctl elect' on one name compete with each
other.

While waiting, coordctl says so on stderr. Once leader it prints
  elected leader of NAME as ID (token T)
  (-w json: {"event":"elected","name":NAME,"id":ID,"token":T})
and holds the leadership until SIGINT, SIGTERM or SIGHUP; then it resigns, so the
next candidate takes over at once, and exits 0. If the leadership is lost
while held (keepalives failing until the local deadline, which comes before
etcd can expire the lease; the lease revoked; the key deleted), it prints a
"lost" event ({"event":"lost",...,"reason":R}) and exits 4.

With a command after '--', the command runs while this candidate leads,
in its own process group, with COORD_ELECTION (NAME), COORD_LEADER_ID (the
value proclaimed), COORD_FENCING_TOKEN and COORD_FENCING_SCOPE (PREFIX+NAME/, where the
election's keys live) set;
nothing is printed on stdout, which is the command's. Signals, exit status
and loss (SIGTERM, SIGKILL after --kill-grace or half the margin before the lease's
earliest expiry, exit 4) are as for 'coordctl lock'; when the command exits,
coordctl resigns and exits with its status.

SIGHUP counts as SIGTERM. A write error on stdout (a closed pipe) ends
nothing: it is noted once on stderr and nothing more is printed.

With --observe it campaigns for nothing and prints one line per change of
leader, {"event":"leader","leader":ID,"token":T}, with "leader":null and
token 0 whenever the election has no leader, until SIGINT or SIGTERM. When
etcd stops answering it says so on stderr, and once the last leader's lease
must have expired (longer than its TTL without an answer) it prints
  no leader known: REASON     (-w json: {"event":"unknown","leader":null,"token":0,"reason":R})
then the leader again once etcd answers.

Coordinated election: --policy priority|newest-version|oldest-version
chooses who should lead, from each candidate's --priority and --version
(attributes published outside NAME/, so etcd's own clients see only its
layout). Under a policy a leader that is not the preferred candidate hands
over to it (unless --no-preempt): the candidates queued before it step
aside, the leader resigns last, no other candidate leads in between and the
new token is higher. A coordctl elect that hands over prints a
"handed-over" event ({"event":"handed-over",...,"reason":R}) and exits 0.
The default, first-come, is etcd's order. With --candidates it prints the
queue, leader first, with attributes, and exits (etcdctl elect, and a
coordctl elect given none of the flags above, have none).`,
		Example: `  coordctl elect scheduler                         # value hostname-pid
  coordctl elect scheduler --id node-1 --ttl 5s -w json
  coordctl elect scheduler http://10.0.0.7:8080     # proclaim an address
  coordctl elect scheduler --id node-1 -- ./run-scheduler.sh   # runs while leading
  coordctl elect scheduler --observe -w json        # {"event":"leader","leader":"node-1","token":42}
  coordctl elect scheduler --id node-2 --policy newest-version --version 1.5.0
  coordctl elect scheduler --id node-3 --policy priority --priority 10 --label zone=eu-west-1a
  coordctl elect scheduler --candidates             # the queue, leader first, with attributes`,
		Args: func(cmd *cobra.Command, args []string) error {
			n := len(args)
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				n = dash
			}
			return cmdutil.ArgsUsage(cobra.RangeArgs(1, 2))(cmd, args[:n])
		},
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				args, opts.Command = args[:dash], args[dash:]
			}
			opts.KillGraceSet = cmd.Flags().Changed("kill-grace")
			opts.Name = args[0]
			if len(args) > 1 {
				opts.Proposal = args[1]
			}
			return runElect(ctx, f, opts)
		}),
	}
	fl := cmd.Flags()
	f.AddEtcdFlags(cmd.PersistentFlags())
	fl.StringVar(&opts.ID, "id", "", "value to proclaim when no PROPOSAL is given (default hostname-pid)")
	fl.DurationVar(&opts.TTL, "ttl", session.DefaultTTL, "lease TTL: a crashed leader is replaced about this long after it stopped (at least 1s)")
	fl.StringVar(&opts.Prefix, "prefix", "", "namespace the election's keys under this etcd key prefix")
	fl.BoolVar(&opts.Observe, "observe", false, "print the leader on every change instead of campaigning")
	fl.BoolVar(&opts.Candidates, "candidates", false, "print the candidates, leader first, with their attributes, and exit")
	hold.AddCoordFlags(fl, &opts.Coord, "default: none")
	fl.DurationVar(&opts.KillGrace, "kill-grace", childproc.DefaultKillGrace, "time between SIGTERM and SIGKILL when the command must stop (on loss, at most until the lease's earliest expiry)")
	return cmd
}

// runElect campaigns and holds the leadership until ctx ends (resign, exit
// 0) or it is lost (exit 4); with --observe it prints leaders until ctx ends.
func runElect(ctx context.Context, f *cmdutil.Factory, opts *electOptions) error {
	p, client, err := f.StartEtcd(ctx, opts.Validate)
	if err != nil {
		return err
	}
	defer client.Close()
	id := opts.Value()
	coordOpts, err := opts.Coord.ElectionOptions(id)
	if err != nil {
		return &cmdutil.UsageError{Err: err}
	}
	e, err := election.New(client, opts.Name, append(coordOpts, election.WithTTL(opts.TTL), election.WithPrefix(opts.Prefix),
		// Without quorum etcd grants no lease: fail within --command-timeout.
		election.WithSessionOptions(hold.SessionOptions(f)...))...)
	if err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	defer e.Close()
	if opts.Observe {
		return observeElection(ctx, f, p, e)
	}
	if opts.Candidates {
		cctx, cancel := f.CommandContext(ctx)
		defer cancel()
		r, err := report.CandidatesOf(cctx, e)
		if err != nil {
			return err
		}
		return p.Print(r)
	}

	holder := ""
	lctx, cancel := f.CommandContext(ctx)
	if cur, err := e.Leader(lctx); err == nil {
		holder = fmt.Sprintf(" (leader now: %s, token %d)", cur.Value, cur.Token)
	}
	cancel()
	fmt.Fprintf(f.IO.ErrOut, "campaigning for %s as %s; waiting to be elected%s...\n", opts.Name, id, holder)
	l, err := e.Campaign(ctx, id)
	if err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while waiting: nothing held
		}
		return fmt.Errorf("campaign for %s: %w", opts.Name, err)
	}
	if len(opts.Command) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "coordctl: elected leader of %s as %s (token %d); running the command\n", opts.Name, id, l.Token())
	}
	// Asked to yield to a preferred candidate (--policy): the command stops
	// and the release is the handover.
	hctx, stopHold := report.UntilYield(ctx, l)
	defer stopHold()
	release := hold.Releaser(ctx, f, l, func(rctx context.Context) error { // a policy's handover, else a resignation
		ev, err := report.StepDown(rctx, l)
		if ev == nil || err != nil {
			return err
		}
		return p.Print(*ev)
	})
	return hold.Run(hctx, f, p, childproc.Run{
		What: "leadership of " + opts.Name,
		Hold: childproc.KeyHold{Liveness: l, Sess: l.Session(), ReleaseFunc: release},
		Stop: l.Yield(),
		OnEnd: func(o childproc.Outcome) {
			if o.Lost != nil && len(opts.Command) == 0 { // with a command, stdout is the command's
				_ = p.Print(report.EventOf(l, "lost", o.Lost.Error()))
			}
		},
		Command:   opts.Command,
		KillGrace: opts.KillGrace,
		Env:       childproc.LeaderEnv(opts.Name, id, l.Token(), l.Scope()),
	}, report.EventOf(l, "elected", ""), opts.KillGraceSet)
}
