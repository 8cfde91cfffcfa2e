package semcmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/internal/report"
	"github.com/coordkit/coordkit/semaphore"
)

type semAdminOptions struct {
	Name   string
	Prefix string
	Limit  int
	Force  bool
}

func newSemSetLimitCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &semAdminOptions{}
	cmd := &cobra.Command{
		Use:   "set-limit NAME N [--prefix P]",
		Short: "Change the limit stored for the semaphore NAME",
		Long: `Store N as the limit of the semaphore NAME (its key NAME/limit). Grants made
after it use the new limit; holders keep their slots (after a lower limit,
slots at or above it stay held until released, and no new slot is granted
while N or more are held). A 'coordctl sem NAME --limit M' with another M
then fails (exit 1) naming the stored limit, and its waiters stop at their
next look.

Prints "ok semaphore NAME limit=N" (-w json: {"name","limit"}).`,
		Example: `  coordctl sem set-limit jobs/encoders 4
  coordctl sem set-limit jobs/encoders 4 -w json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return cmdutil.UsageErrorf("sem set-limit needs NAME and N")
			}
			if _, err := parseLimit(args[1]); err != nil {
				return cmdutil.UsageErrorf("sem set-limit: N must be a whole number of at least 1, got %q", args[1])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			opts.Limit, _ = parseLimit(args[1])
			return runSemSetLimit(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Prefix, "prefix", "", "the etcd key prefix the semaphore's keys are under (as given to coordctl sem --prefix)")
	return cmd
}

func newSemDeleteCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &semAdminOptions{}
	cmd := &cobra.Command{
		Use:   "delete NAME [--force] [--prefix P]",
		Short: "Remove the semaphore NAME from etcd (its stored limit), freeing the name",
		Long: `Delete the semaphore NAME: its stored limit, so that the name can be used
again with another limit, or as a lock. Refused (exit 3) while a slot is held
or a waiter queued, naming how many; with --force the slot and queue keys go
too: every holder loses its slot at once (its 'coordctl sem' exits 4) and
every waiter stops.

Prints "deleted semaphore NAME" or "semaphore NAME: nothing to delete"
(-w json: {"name","deleted"}).`,
		Example: `  coordctl sem delete jobs/encoders
  coordctl sem delete jobs/encoders --force     # holders lose their slots`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.UsageErrorf("sem delete needs exactly one NAME")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runSemDelete(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "delete even while held: holders lose their slots")
	cmd.Flags().StringVar(&opts.Prefix, "prefix", "", "the etcd key prefix the semaphore's keys are under (as given to coordctl sem --prefix)")
	return cmd
}

func runSemSetLimit(ctx context.Context, f *cmdutil.Factory, opts *semAdminOptions) error {
	cfg := primitive.Config{Kind: primitive.KindSemaphore, Name: opts.Name, Prefix: opts.Prefix, Limit: opts.Limit}
	return f.EtcdCall(ctx, func() error { return cmdutil.CheckConfig(cfg) }, func(ctx context.Context, p *cmdutil.Printer, c *clientv3.Client) error {
		if err := semaphore.SetLimit(ctx, c, opts.Name, opts.Limit, semaphore.WithPrefix(opts.Prefix)); err != nil {
			return semAdminError("set the limit of", opts.Name, err)
		}
		return p.Print(report.SemLimit{Name: opts.Name, Limit: opts.Limit})
	})
}

func runSemDelete(ctx context.Context, f *cmdutil.Factory, opts *semAdminOptions) error {
	cfg := primitive.Config{Kind: primitive.KindSemaphore, Name: opts.Name, Prefix: opts.Prefix}
	return f.EtcdCall(ctx, func() error { return cmdutil.UsageOrNil(cfg.ValidateKeys()) }, func(ctx context.Context, p *cmdutil.Printer, c *clientv3.Client) error {
		deleted, err := semaphore.Delete(ctx, c, opts.Name, opts.Force, semaphore.WithPrefix(opts.Prefix))
		if errors.Is(err, semaphore.ErrInUse) {
			return cmdutil.Mark(cmdutil.ErrNotAcquired, fmt.Errorf("semaphore %s is in use: %w (wait for the holders to release, or --force to take their slots)", opts.Name, err))
		}
		if err != nil {
			return semAdminError("delete", opts.Name, err)
		}
		return p.Print(report.SemDeleted{Name: opts.Name, Deleted: deleted})
	})
}

// semAdminError maps an invalid name to a usage error (exit 2).
func semAdminError(what, name string, err error) error {
	if errors.Is(err, semaphore.ErrInvalid) {
		return cmdutil.UsageErrorf("sem: %v", err)
	}
	return fmt.Errorf("%s semaphore %s: %w", what, name, err)
}

// parseLimit reads the N of sem set-limit NAME N: a whole number of at
// least 1.
func parseLimit(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("limit must be a whole number of at least 1, got %q", s)
	}
	return n, nil
}
