package check

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/childproc"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil/hold"
	"github.com/coordkit/coordkit/internal/safety"
)

// The hidden commands lock-safety's process clients run: rmw (one fenced
// read-modify-write) under 'coordctl lock' or 'coordctl sidecar', and
// redsync-lock, the supervisor role of 'coordctl lock' with redsync.

// ---- rmw: the command the process clients run under `coordctl lock` ----

type rmwOptions struct {
	URL, Key, ID   string
	Work           time.Duration
	Fence, IfMatch bool
}

func newCheckRMWCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &rmwOptions{}
	cmd := &cobra.Command{
		Use:    "rmw --url URL --key KEY --id ID",
		Short:  "One fenced read-modify-write of a counter (run by lock-safety under 'coordctl lock')",
		Hidden: true,
		Long: `Fence with $COORD_FENCING_TOKEN, read the counter KEY, wait --work, write the
value + 1 tagged with ID.TOKEN; print what happened as one JSON line. Exit 5 if the
write was rejected as stale, 1 on other errors.`,
		Example: `  coordctl lock safety -- coordctl check rmw --url http://127.0.0.1:7070 --key counter --id x-1`,
		Args:    cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheckRMW(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.URL, "url", "", "URL of the protected resource")
	fl.StringVar(&opts.Key, "key", "counter", "the counter's key")
	fl.StringVar(&opts.ID, "id", "", "id stored with the write")
	fl.DurationVar(&opts.Work, "work", 0, "time between the read and the write")
	fl.BoolVar(&opts.Fence, "fence", true, "fence before reading")
	fl.BoolVar(&opts.IfMatch, "if-match", false, "write only if the counter's version is still the one read")
	return cmd
}

func runCheckRMW(ctx context.Context, f *cmdutil.Factory, opts *rmwOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if opts.URL == "" || opts.ID == "" {
		return cmdutil.UsageErrorf("--url and --id are required")
	}
	tok, err := cmdutil.ParseTokenFlag(f.Getenv(childproc.EnvFencingToken))
	if err != nil {
		return cmdutil.UsageErrorf("$%s: %v", childproc.EnvFencingToken, err)
	}
	scope := cmdutil.EnvScope(f)
	if err := cmdutil.CheckScopeFlag(scope); err != nil {
		return err
	}
	hc := &http.Client{Timeout: f.Global.CommandTimeout}
	defer hc.CloseIdleConnections()
	res, err := safety.HTTPRMW(ctx, fencing.Client{BaseURL: opts.URL, HTTP: hc}, safety.RMWOptions{
		Key: opts.Key, ID: opts.ID, Token: tok, Scope: scope, Work: opts.Work, Fence: opts.Fence, IfMatch: opts.IfMatch})
	if perr := p.Print(res); perr != nil {
		return perr
	}
	return rmwExit(err)
}

// rmwExit is the exit of rmw and sql-rmw: 0 written, 5 stale, 1 otherwise.
func rmwExit(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fencing.ErrStale):
		return cmdutil.Reported(err)
	}
	return cmdutil.Reported(cmdutil.Mark(cmdutil.ErrFailed, err))
}

// ---- redsync-lock: `coordctl lock` for the redsync process clients ----

type redsyncLockOptions struct {
	Redis, Prefix string
	TTL, Timeout  time.Duration
	Command       []string
}

func newCheckRedsyncLockCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &redsyncLockOptions{}
	cmd := &cobra.Command{
		Use:    "redsync-lock --redis ADDR --prefix P -- COMMAND [ARG...]",
		Short:  "Run a command while holding a check's redsync lock (run by lock-safety --lock redsync)",
		Hidden: true,
		Long: `Take the redsync lock of a lock-safety run (keys under --prefix on --redis), run
the command with $COORD_LOCK_NAME and $COORD_FENCING_TOKEN (the grant's number:
redsync has no token), unlock when it exits, and exit with its status. Like a
user's wrapper around redsync, nothing stops the command when the lock expires.`,
		Example: `  coordctl check redsync-lock --redis 127.0.0.1:6379 --prefix coordkit-safety-x/ -- coordctl check rmw --url URL --id x-1`,
		Args:    cmdutil.ArgsUsage(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Command = args
			return runCheckRedsyncLock(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Redis, "redis", "", "the Redis server, host:port")
	fl.DurationVar(&f.Global.DialTimeout, "dial-timeout", cmdutil.DefaultDialTimeout, "time to wait for Redis to answer")
	fl.StringVar(&opts.Prefix, "prefix", "", "the run's key prefix")
	fl.DurationVar(&opts.TTL, "ttl", 2*time.Second, "the lock's expiry")
	fl.DurationVar(&opts.Timeout, "timeout", 5*time.Second, "give up acquiring after this long")
	return cmd
}

func runCheckRedsyncLock(ctx context.Context, f *cmdutil.Factory, opts *redsyncLockOptions) error {
	if opts.Redis == "" || opts.Prefix == "" {
		return cmdutil.UsageErrorf("--redis and --prefix are required")
	}
	actx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	hold, err := safety.HoldRedsync(actx, opts.Redis, opts.Prefix, opts.TTL, f.Global.DialTimeout)
	switch {
	case errors.Is(err, safety.ErrRedisUnreachable):
		return err
	case err != nil:
		return cmdutil.Mark(cmdutil.ErrNotAcquired, err)
	}
	return runAnchorHeld(ctx, f, nil, nil, "redsync lock", safety.Scope, hold.Token(), hold.Release, opts.Command)
}

// runAnchorHeld runs command (or, without one, prints out and waits) while
// an anchor's lock on name is held, and releases it with release.
func runAnchorHeld(ctx context.Context, f *cmdutil.Factory, p *cmdutil.Printer, out any, what, name string, tok fencing.Token, release func(context.Context) error, command []string) error {
	return hold.Run(ctx, f, p, childproc.Run{
		What: what + " " + name, Command: command, KillGrace: childproc.DefaultKillGrace,
		Hold: childproc.AnchorHold{ReleaseFunc: func() error {
			rctx, cancel := context.WithTimeout(context.Background(), f.Global.CommandTimeout)
			defer cancel()
			return release(rctx)
		}},
		Env: map[string]string{childproc.EnvLockName: name, childproc.EnvFencingToken: tok.String()},
	}, out, false)
}
