package claimcmd

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/claim"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil/hold"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/session"
)

type claimOptions struct {
	Name   string
	Owner  string
	TTL    time.Duration
	Prefix string
}

// NewCmd returns the command coordctl claim.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &claimOptions{}
	cmd := &cobra.Command{
		Use:   "claim NAME --owner OWNER [--ttl D] [--prefix P]",
		Short: "Claim a unique name with one etcd compare-and-set",
		Long: `Claim NAME for OWNER with one etcd transaction:

  If CreateRevision(key) == 0 Then Put(key, OWNER) Else Get(key)

where key is <prefix>/NAME (default prefix coordkit/claims). Of any number of
concurrent claims exactly one creates the key; all others read the winner in
the same transaction. Lamport timestamps cannot do this: they order two
requests only after both nodes have already answered (see 'coordctl lamport').

The result goes to stdout in every case:
  won          exit 0, {"name","owner","revision","claimed":true,"yours":true}
  yours        exit 0, the name is already held by OWNER (claimed false,
               yours true); nothing is written and the TTL is not renewed
  taken        exit 3, the current owner: {"claimed":false,"yours":false,...}
revision is the claim key's create revision: unique per claim, increasing.

--ttl puts the claim on a new lease that coordctl does NOT keep alive: the
claim expires TTL after it was made unless something renews the lease (it is
printed; 'etcdctl lease keep-alive ID'). TTLs round up to whole seconds, must
be at least 1s, and etcd raises them to its minimum lease TTL (2s with
default settings); the granted TTL is printed. Without --ttl the claim lasts
until released.

Owners are compared as strings: give every claimant its own owner name.`,
		Example: `  coordctl claim alice --owner node-1            # exit 0: yours
  coordctl claim alice --owner node-2            # exit 3: owned by node-1
  coordctl claim alice --owner node-2 -w json    # {"name":"alice","owner":"node-1",...,"claimed":false}
  coordctl claim session-7 --owner web-3 --ttl 30s
  coordctl claim get alice
  coordctl claim release alice --owner node-1`,
		Args: cmdutil.ArgsUsage(cobra.ExactArgs(1)),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, _ *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runClaimOp(ctx, f, opts, claim.OpClaim)
		}),
	}
	f.AddEtcdFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().StringVar(&opts.Prefix, "prefix", claim.DefaultPrefix, "key prefix of claims: the claim on NAME is <prefix>/NAME")
	cmd.Flags().StringVar(&opts.Owner, "owner", "", "who claims the name (required)")
	cmd.Flags().DurationVar(&opts.TTL, "ttl", 0, "put the claim on a lease of this TTL, not kept alive (0: no lease)")
	cmd.AddCommand(newClaimReleaseCmd(f, opts), newClaimGetCmd(f, opts))
	return cmd
}

func newClaimReleaseCmd(f *cmdutil.Factory, parent *claimOptions) *cobra.Command {
	cmd, opts := claimSubCmd(f, parent, claim.OpRelease, &cobra.Command{
		Use:   "release NAME --owner OWNER",
		Short: "Release a claim if OWNER holds it",
		Long: `Delete the claim on NAME if and only if OWNER holds it, in one transaction
that compares the key's value with OWNER. Exit 0 with the released claim;
exit 3 if someone else holds it (naming the owner) and exit 3 too if NAME is
not claimed at all (the message says which). A lease the claim lived on is
left to expire.`,
		Example: `  coordctl claim release alice --owner node-1
  coordctl claim release alice --owner node-1 --prefix myapp/names -w json`,
	})
	cmd.Flags().StringVar(&opts.Owner, "owner", "", "the owner releasing the name (required)")
	return cmd
}

func newClaimGetCmd(f *cmdutil.Factory, parent *claimOptions) *cobra.Command {
	cmd, _ := claimSubCmd(f, parent, claim.OpGet, &cobra.Command{
		Use:   "get NAME",
		Short: "Show who holds a claim",
		Long: `Show the owner of NAME, the claim's revision and, if it lives on a lease,
the lease and the time it has left. Exit 3 with a message if NAME is not
claimed.`,
		Example: `  coordctl claim get alice
  coordctl claim get alice -w json   # {"name":"alice","owner":"node-1","revision":7,...}`,
	})
	return cmd
}

// claimSubCmd completes claim release and claim get: one NAME, the
// parent's --prefix, and op.
func claimSubCmd(f *cmdutil.Factory, parent *claimOptions, op claim.Op, cmd *cobra.Command) (*cobra.Command, *claimOptions) {
	opts := &claimOptions{}
	cmd.Args = cmdutil.ArgsUsage(cobra.ExactArgs(1))
	cmd.RunE = cmdutil.SignalRunE(f, func(ctx context.Context, _ *cobra.Command, args []string) error {
		opts.Name, opts.Prefix = args[0], parent.Prefix
		return runClaimOp(ctx, f, opts, op)
	})
	return cmd, opts
}

// validateClaimArgs checks arguments before any connection, so bad input is
// exit 2 whether or not etcd is up.
func validateClaimArgs(opts *claimOptions, needOwner bool) error {
	if opts.Name == "" {
		return cmdutil.UsageErrorf("NAME must not be empty")
	}
	if err := primitive.ValidateName(opts.Name); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	if needOwner && opts.Owner == "" {
		return cmdutil.UsageErrorf("--owner is required and must not be empty")
	}
	if opts.TTL != 0 && opts.TTL < claim.MinTTL {
		return cmdutil.UsageErrorf("invalid --ttl %s: must be 0 (no lease) or at least %s; etcd raises shorter leases to its minimum (2s by default)", opts.TTL, claim.MinTTL)
	}
	if opts.TTL == 0 {
		return nil
	}
	return checkTTLFlag(opts.TTL)
}

// claimErr says what claim's errors mean: someone else's name is "not
// acquired" (exit 3), a bad argument is a usage error.
func claimErr(err error) error {
	switch {
	case errors.Is(err, claim.ErrNotClaimed), errors.Is(err, claim.ErrNotOwner):
		return cmdutil.Mark(cmdutil.ErrNotAcquired, err)
	case errors.Is(err, session.ErrInvalidName), errors.Is(err, claim.ErrEmptyOwner), errors.Is(err, session.ErrBadTTL):
		return &cmdutil.UsageError{Err: err}
	}
	return err
}

// runClaimOp checks the arguments before any connection (bad input is exit
// 2 whether or not etcd is up), runs op within --command-timeout and
// prints its result; a claim that is not yours is exit 3.
func runClaimOp(ctx context.Context, f *cmdutil.Factory, opts *claimOptions, op claim.Op) error {
	return f.EtcdCall(ctx, func() error { return validateClaimArgs(opts, op != claim.OpGet) }, func(ctx context.Context, p *cmdutil.Printer, c *clientv3.Client) error {
		res, err := claim.Do(ctx, c, op, opts.Name, opts.Owner, claim.WithPrefix(opts.Prefix), claim.WithTTL(opts.TTL))
		if err != nil {
			return claimErr(err)
		}
		if err := p.Print(res.Report(op)); err != nil || op != claim.OpClaim || res.Yours {
			return err
		}
		return cmdutil.Reported(cmdutil.ErrNotAcquired) // the output says whose it is
	})
}

// checkTTLFlag checks --ttl with the library's bounds, before anything is
// dialed: a usage error (exit 2).
func checkTTLFlag(ttl time.Duration) error { return cmdutil.UsageOrNil(hold.CheckTTLFlag(ttl)) }
