package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/fencing"
)

// ---- repair ----

type resourceRepairOptions struct {
	DataDir string
	Yes     bool
}

type resourceRepairResult struct{ fencing.RepairPlan }

// WriteSimple adds to the plan what to run when it was not applied.
func (r resourceRepairResult) WriteSimple(w io.Writer) error {
	if err := r.WriteText(w); err != nil || !r.NeedsRepair() || r.Applied {
		return err
	}
	_, err := fmt.Fprintln(w, "nothing changed: run again with --yes to drop these records")
	return err
}

// orDash is s, or "-" for an empty s.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newResourceRepairCmd(f *factory) *cobra.Command {
	opts := &resourceRepairOptions{}
	cmd := &cobra.Command{
		Use:   "repair --data-dir D [--yes]",
		Short: "Drop a damaged record from a stopped resource's log, keeping the floors",
		Long: `Examine the log of a resource that refused to start with "corrupt log"
(no 'resource serve' may be running on the directory) and print what a
repair drops: the first damaged record and every record after it. Nothing
changes without --yes: then it exits 1 if there is something to drop (the
log is still damaged and 'resource serve' will refuse it), 0 if the log is
sound; 2 is kept for bad flags.

With --yes it copies the log to DATA_DIR/resource.log.before-repair, keeps the
intact records before the damage and appends a fence for each scope at the
highest token a dropped record claims, so that no floor goes down. The
writes it drops are lost.`,
		Example: `  coordctl resource repair --data-dir /tmp/res          # what would be dropped
  coordctl resource repair --data-dir /tmp/res --yes    # drop it`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runResourceRepair(f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.DataDir, "data-dir", "", "the resource's data directory (required)")
	cmd.Flags().BoolVar(&opts.Yes, "yes", false, "apply the repair")
	return cmd
}

func runResourceRepair(f *factory, opts *resourceRepairOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if opts.DataDir == "" {
		return usageErrorf("--data-dir is required")
	}
	plan, err := fencing.Repair(opts.DataDir, opts.Yes)
	if err != nil {
		if errors.Is(err, fencing.ErrCorrupt) {
			return err
		}
		return fmt.Errorf("repair %s: %w", opts.DataDir, err)
	}
	if err := p.Print(resourceRepairResult{plan}); err != nil {
		return err
	}
	if plan.NeedsRepair() && !plan.Applied {
		return mark(errFailed, errors.New("repair: damage found, not applied: run again with --yes to drop it"))
	}
	return nil
}
