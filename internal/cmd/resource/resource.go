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
	"github.com/coordkit/coordkit/internal/httpserve"
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
checks fencing tokens. It keeps, per scope (where the holder's key lives in
etcd: PREFIX+NAME/ for a lock or an election, PREFIX+NAME/slots/I for a
semaphore's slot; $COORD_FENCING_SCOPE under a hold), the
highest token it admitted, the floor; a write or fence with a lower token is
rejected as stale (HTTP 409, exit 5). Floors and writes are fsynced before
they are acknowledged, so they survive a restart.

'resource serve' runs it; put, get, fence and log are its clients. None of
these commands needs etcd: given one (--endpoints), repair raises floors to
its revision, and put and fence explain a refusal with it. See
docs/fencing.md for the HTTP API.`,
		Example: `  coordctl resource serve --listen 127.0.0.1:7070 --data-dir /tmp/res &
  # inside 'coordctl lock jobs/nightly -- ...': token and scope come from the lock
  coordctl lock jobs/nightly -- coordctl resource put config v1
  coordctl lock jobs/nightly -- sh -c 'coordctl resource fence && ./job.sh'
  coordctl resource get config
  coordctl resource log --scope jobs/nightly/ -w json
  # by hand, with a token a lock gave you (a made-up high token would make
  # every later real holder's write exit 5 as stale)
  coordctl resource put config v2 --token "$TOKEN" --scope jobs/nightly/`,
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
	res, err := fencing.NewResource(fencing.ResourceConfig{DataDir: opts.DataDir, Logger: logger, Unfenced: opts.Unfenced})
	if err != nil {
		_ = ln.Close()
		return err
	}
	defer res.Close()
	// httpserve, not fencing.Serve: a connection that has sent no request
	// does not hold up the stop (net/http counts it busy for 5s).
	srv := httpserve.Start(ln, res, httpserve.Logger(logger))
	url := httpserve.URL(ln.Addr())
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Print(resourceReady{URL: url, DataDir: opts.DataDir, Unfenced: opts.Unfenced}); err != nil {
		_ = srv.Shutdown(sctx)
		return err
	}
	select {
	case <-ctx.Done():
	case err := <-srv.Failed():
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintln(f.IO.ErrOut, "coordctl resource serve: stopping")
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return res.Close()
}

// ---- repair ----

type resourceRepairOptions struct {
	DataDir string
	Yes     bool
	AtLeast string
}

type resourceRepairResult struct {
	fencing.RepairPlan
	dataDir string
}

// WriteSimple adds to the plan what to run when it was not applied.
func (r resourceRepairResult) WriteSimple(w io.Writer) error {
	if err := r.WriteText(w); err != nil || !r.NeedsRepair() || r.Applied {
		return err
	}
	if r.NeedsBound && r.Bound == 0 {
		_, err := fmt.Fprintf(w, "nothing changed: %s\n", runWithABound(r.dataDir, r.HighestKept))
		return err
	}
	_, err := fmt.Fprintln(w, "nothing changed: run again with --yes to drop these records")
	return err
}

// runWithABound says what to run when a repair needs a bound.
func runWithABound(dataDir string, highest fencing.Token) string {
	return fmt.Sprintf("run 'coordctl resource repair --data-dir %s --yes --endpoints HOST:PORT' with the etcd that grants "+
		"the tokens (its current revision is the bound), or '--at-least N' with N at or above every token it granted "+
		"(and at least %d, the highest floor kept)", dataDir, highest)
}

func newResourceRepairCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &resourceRepairOptions{}
	cmd := &cobra.Command{
		Use:   "repair --data-dir D [--yes] [--endpoints E | --at-least N]",
		Short: "Drop a damaged record from a stopped resource's log, never lowering a floor",
		Long: `Examine the log of a resource that refused to start with "corrupt log"
(no 'resource serve' may be running on the directory) and print what a
repair drops: the first damaged record and every record after it. Nothing
changes without --yes: then it exits 1 if there is something to drop (the
log is still damaged and 'resource serve' will refuse it), 0 if the log is
sound; 2 is kept for bad flags.

A damaged record (a checksum that fails, a zero-filled record) cannot be
trusted: its scope and token may be anything, and it may have been an
acknowledged fence. So a repair needs a bound that no granted token
exceeds: every token is a revision of the etcd that grants them, so its
current revision is one (--endpoints, with the etcd flags of the other
commands), or give one yourself (--at-least N; with both, the higher
counts). The repair raises the floor of every scope, those in the log and
those it never named, to the bound: tokens granted before the damage are
refused everywhere, the next holders are admitted. Without a bound, --yes
refuses (exit 1, nothing changed) and says what to run. A bound below a
floor the log keeps is refused too: it cannot be a bound.

With --yes it copies the log to DATA_DIR/resource.log.before-repair, keeps the
intact records before the damage, records the bound and re-fences each scope
at the highest token an intact dropped record holds. The writes it drops
are lost. See docs/fencing.md.`,
		Example: `  coordctl resource repair --data-dir /tmp/res          # what would be dropped
  # drop it; every floor rises to etcd's current revision
  coordctl resource repair --data-dir /tmp/res --yes --endpoints 127.0.0.1:2379
  # no etcd at hand: a bound you know no granted token exceeds
  coordctl resource repair --data-dir /tmp/res --yes --at-least 250000`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runResourceRepair(cmd.Context(), f, opts, etcdKnown(f, cmd))
		},
	}
	cmd.Flags().StringVar(&opts.DataDir, "data-dir", "", "the resource's data directory (required)")
	cmd.Flags().BoolVar(&opts.Yes, "yes", false, "apply the repair")
	cmd.Flags().StringVar(&opts.AtLeast, "at-least", "", "a bound no granted token exceeds: every floor rises to it")
	f.AddEtcdFlags(cmd.Flags())
	return cmd
}

func runResourceRepair(ctx context.Context, f *cmdutil.Factory, opts *resourceRepairOptions, askEtcd bool) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if opts.DataDir == "" {
		return cmdutil.UsageErrorf("--data-dir is required")
	}
	var bound fencing.Token
	if opts.AtLeast != "" {
		if bound, err = fencing.ParseToken(opts.AtLeast); err != nil {
			return cmdutil.UsageErrorf("invalid --at-least: %v", err)
		}
	}
	if askEtcd {
		rev, err := etcdRevision(ctx, f)
		if err != nil {
			return fmt.Errorf("repair %s: the bound: %w", opts.DataDir, err)
		}
		bound = max(bound, fencing.Token(rev))
	}
	plan, err := fencing.Repair(opts.DataDir, fencing.RepairOptions{Apply: opts.Yes, Bound: bound})
	switch {
	case errors.Is(err, fencing.ErrRepairNeedsBound):
		_ = p.Print(resourceRepairResult{plan, opts.DataDir})
		return fmt.Errorf("repair %s: nothing changed: %w; %s", opts.DataDir, err, runWithABound(opts.DataDir, plan.HighestKept))
	case errors.Is(err, fencing.ErrBoundBelowFloor):
		return fmt.Errorf("repair %s: nothing changed: %w", opts.DataDir, err)
	case errors.Is(err, fencing.ErrCorrupt):
		return err
	case err != nil:
		return fmt.Errorf("repair %s: %w", opts.DataDir, err)
	}
	if err := p.Print(resourceRepairResult{plan, opts.DataDir}); err != nil {
		return err
	}
	switch {
	case plan.NeedsRepair() && !plan.Applied && plan.NeedsBound && plan.Bound == 0:
		return cmdutil.Mark(cmdutil.ErrFailed, errors.New("repair: damage found, not applied: an untrusted record needs a bound (--endpoints or --at-least) and --yes"))
	case plan.NeedsRepair() && !plan.Applied:
		return cmdutil.Mark(cmdutil.ErrFailed, errors.New("repair: damage found, not applied: run again with --yes to drop it"))
	}
	return nil
}
