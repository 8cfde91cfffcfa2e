package cmdutil

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/primitive"
)

// StatusOptions are the options of lock status and sem status.
type StatusOptions struct {
	Name   string
	Prefix string
}

// StatusCmd completes lock status and sem status: one NAME (statusArgs),
// --prefix, and run.
func StatusCmd(f *Factory, command, noun string, run func(context.Context, *Factory, *StatusOptions) error, cmd *cobra.Command) *cobra.Command {
	opts := &StatusOptions{}
	cmd.Args = statusArgs(command, noun)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts.Name = args[0]
		return run(cmd.Context(), f, opts)
	}
	cmd.Flags().StringVar(&opts.Prefix, "prefix", "", "the etcd key prefix the "+noun+"'s keys are under (as given to coordctl "+command+" --prefix)")
	return cmd
}

// statusArgs checks the one NAME of lock status and sem status; the
// message says how to hold something named "status".
func statusArgs(command, noun string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return UsageErrorf(`%s status needs exactly one NAME (to hold a %s named "status": coordctl %s --name status)`, command, noun, command)
		}
		return nil
	}
}

// ReadStatus runs lock status and sem status: read within
// --command-timeout and print; nobody holding it is exit 3 (free, the
// output says so).
func ReadStatus[S interface{ Held() bool }](ctx context.Context, f *Factory, command string, opts *StatusOptions, cfg primitive.Config,
	read func(context.Context, *clientv3.Client) (S, error), free error) error {
	check := func() error {
		if err := NeedName(command+" status", opts.Name); err != nil {
			return err
		}
		return UsageOrNil(cfg.ValidateKeys())
	}
	return f.EtcdCall(ctx, check, func(ctx context.Context, p *Printer, c *clientv3.Client) error {
		st, err := read(ctx, c)
		if err != nil {
			return fmt.Errorf("%s status %s: %w", command, opts.Name, err)
		}
		if err := p.Print(st); err != nil {
			return err
		}
		if !st.Held() {
			return Reported(Mark(ErrNotAcquired, free))
		}
		return nil
	})
}
