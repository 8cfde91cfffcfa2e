package resource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// EnvURL is the resource's address when --url is not given, as
// COORDCTL_ENDPOINTS is etcd's; a child of 'coordctl lock' inherits it.
const EnvURL = "COORDCTL_RESOURCE_URL"

// NewCmd returns the command coordctl resource.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resource",
		Short: "Run or use the fenced key-value store that fencing tokens protect",
		Long: `A protected resource: a small durable key-value store served over HTTP that
checks fencing tokens. It keeps, per scope (the lock or election name), the
highest token it admitted, the floor; a write or fence with a lower token is
rejected as stale (HTTP 409, exit 5). Floors and writes are fsynced before
they are acknowledged, so they survive a restart.

'resource serve' runs it; put, get, fence and log are its clients. None of
these commands talk to etcd. See docs/fencing.md for the HTTP API.`,
		Example: `  coordctl resource serve --listen 127.0.0.1:7070 --data-dir /tmp/res &
  # inside 'coordctl lock jobs/nightly -- ...': token and scope come from the lock
  coordctl lock jobs/nightly -- coordctl resource put config v1
  coordctl lock jobs/nightly -- sh -c 'coordctl resource fence && ./job.sh'
  coordctl resource get config
  coordctl resource log --scope jobs/nightly -w json
  # by hand, with a token a lock gave you (a made-up high token would make
  # every later real holder's write exit 5 as stale)
  coordctl resource put config v2 --token "$TOKEN" --scope jobs/nightly`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
	}
	cmd.AddCommand(newResourceServeCmd(f), newResourcePutCmd(f), newResourceGetCmd(f),
		newResourceFenceCmd(f), newResourceLogCmd(f), newResourceRepairCmd(f), newResourceFloorsCmd(f))
	return cmd
}

// ---- serve ----

type resourceServeOptions struct {
	Listen   string
	DataDir  string
	Unfenced bool
}

type resourceReady struct {
	URL      string `json:"url"`
	DataDir  string `json:"data_dir"`
	Unfenced bool   `json:"unfenced"`
}

func (r resourceReady) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintf(w, "ready url=%s\n", r.URL)
	return err
}

func newResourceServeCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &resourceServeOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the protected resource over HTTP in the foreground",
		Long: `Serve the protected resource over HTTP until SIGINT or SIGTERM. Once it
listens it prints one line, 'ready url=URL' (with -w json: {"url":URL,...});
with port 0 the URL shows the port it got. Its log (writes, fences,
idempotency records) lives in --data-dir; a restart on the same directory
keeps every floor, so a stale token stays rejected. Rejections and recovery
notes go to stderr.

--unfenced serves the same store without the token check (tokens are only
recorded): the "lock without fencing" baseline.`,
		Example: `  coordctl resource serve --data-dir /tmp/res
  coordctl resource serve --listen 127.0.0.1:0 --data-dir /tmp/res -w json
  coordctl resource serve --data-dir /tmp/res-unfenced --unfenced`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, _ *cobra.Command, _ []string) error { return runResourceServe(ctx, f, opts) }),
	}
	cmd.Flags().StringVar(&opts.Listen, "listen", "127.0.0.1:7070", "address to listen on (host:port; port 0 picks a free one)")
	cmd.Flags().StringVar(&opts.DataDir, "data-dir", "coordctl.resource", "directory of the resource's log")
	cmd.Flags().BoolVar(&opts.Unfenced, "unfenced", false, "accept every token (record, don't check): the unsafe baseline")
	return cmd
}

// runResourceServe serves until ctx is cancelled or the server fails.
func runResourceServe(ctx context.Context, f *cmdutil.Factory, opts *resourceServeOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if opts.DataDir == "" {
		return cmdutil.UsageErrorf("--data-dir must not be empty")
	}
	if err := cmdutil.CheckListen("--listen", opts.Listen); err != nil {
		return err
	}
	// Bind first: a busy port must not leave a new data dir and log behind.
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", opts.Listen, err)
	}
	logger := slog.New(slog.NewTextHandler(f.IO.ErrOut, nil))
	srv, err := fencing.Serve(ln, fencing.ResourceConfig{DataDir: opts.DataDir, Logger: logger, Unfenced: opts.Unfenced})
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := p.Print(resourceReady{URL: srv.URL, DataDir: opts.DataDir, Unfenced: opts.Unfenced}); err != nil {
		return err
	}
	if err := srv.Wait(ctx); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintln(f.IO.ErrOut, "coordctl resource serve: stopping")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return srv.Resource.Close()
}

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

func newResourceRepairCmd(f *cmdutil.Factory) *cobra.Command {
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
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runResourceRepair(f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.DataDir, "data-dir", "", "the resource's data directory (required)")
	cmd.Flags().BoolVar(&opts.Yes, "yes", false, "apply the repair")
	return cmd
}

func runResourceRepair(f *cmdutil.Factory, opts *resourceRepairOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if opts.DataDir == "" {
		return cmdutil.UsageErrorf("--data-dir is required")
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
		return cmdutil.Mark(cmdutil.ErrFailed, errors.New("repair: damage found, not applied: run again with --yes to drop it"))
	}
	return nil
}
