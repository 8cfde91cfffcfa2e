package check

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/childproc"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/pglock"
	"github.com/coordkit/coordkit/internal/safety"
)

// ---- pg-advisory-lock: `coordctl lock` for a PostgreSQL advisory lock ----

type pgLockOptions struct {
	DSN, Name, Sequence, Via string
	Timeout                  time.Duration
	Command                  []string
}

func newCheckPGLockCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &pgLockOptions{}
	cmd := &cobra.Command{
		Use:    "pg-advisory-lock --dsn DSN --name NAME [--sequence SEQ] [--via HOST:PORT] [-- COMMAND [ARG...]]",
		Short:  "Hold a PostgreSQL advisory lock, alone or while a command runs (run by bench lock and lock-safety --lock pg-advisory)",
		Hidden: true,
		Long: `Open a lock connection to --dsn (through --via HOST:PORT when given: a fault
proxy), take pg_advisory_lock of NAME's key (the first 8 bytes of SHA-256 of
NAME, see internal/pglock), and with --sequence take a token, nextval(SEQ), on
the lock connection. Without a command print {"name","key","pid","token"} and
hold until SIGINT or SIGTERM; with one run it with $COORD_LOCK_NAME and
$COORD_FENCING_TOKEN, unlock when it exits, and exit with its status. Like a
user's wrapper around an advisory lock, nothing stops the command when the
server ends the lock's session. The lock connection's keepalives are
` + pglock.DefaultKeepalive.String() + `.`,
		Example: `  coordctl check pg-advisory-lock --dsn postgres://root@127.0.0.1:5432/test --name jobs
  coordctl check pg-advisory-lock --dsn DSN --name safety --sequence s_tokens -- coordctl check sql-rmw ...`,
		Args: cmdutil.ArgsUsage(cobra.ArbitraryArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, _ *cobra.Command, args []string) error {
			opts.Command = args
			return runCheckPGLock(ctx, f, opts)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.DSN, "dsn", "", "the PostgreSQL database (a pgx DSN: URL or key=value)")
	fl.StringVar(&opts.Name, "name", "", "the lock's name")
	fl.StringVar(&opts.Sequence, "sequence", "", "take a token from this sequence after acquiring")
	fl.StringVar(&opts.Via, "via", "", "dial the lock connection to this host:port instead (a proxy)")
	fl.DurationVar(&f.Global.DialTimeout, "dial-timeout", cmdutil.DefaultDialTimeout, "time to wait for PostgreSQL to answer")
	fl.DurationVar(&opts.Timeout, "timeout", 5*time.Second, "give up acquiring after this long (0: wait without end)")
	return cmd
}

func runCheckPGLock(ctx context.Context, f *cmdutil.Factory, opts *pgLockOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if opts.DSN == "" || opts.Name == "" {
		return cmdutil.UsageErrorf("--dsn and --name are required")
	}
	if _, _, err := net.SplitHostPort(opts.Via); opts.Via != "" && err != nil {
		return cmdutil.UsageErrorf("invalid --via %q: want host:port", opts.Via)
	}
	l, token, err := pglock.Acquire(ctx, pglock.AcquireConfig{DSN: opts.DSN, Name: opts.Name, Via: opts.Via, Sequence: opts.Sequence,
		DialTimeout: f.Global.DialTimeout, Timeout: opts.Timeout, Keepalive: pglock.DefaultKeepalive})
	switch {
	case errors.Is(err, pglock.ErrInvalid):
		return cmdutil.UsageErrorf("%v", err)
	case errors.Is(err, pglock.ErrNotAcquired):
		return cmdutil.Mark(cmdutil.ErrNotAcquired, err)
	case errors.Is(err, pglock.ErrNoToken):
		return cmdutil.Mark(cmdutil.ErrLost, err)
	case err != nil:
		return err
	}
	defer func() { _ = l.Close() }()
	return runAnchorHeld(ctx, f, p, l.Holding(token), "pg-advisory lock", opts.Name, token, l.Unlock, opts.Command)
}

// ---- sql-rmw: the command the pg-advisory process clients run ----

type sqlRMWOptions struct {
	DSN, Prefix, ID string
	Work            time.Duration
	Fenced          bool
}

func newCheckSQLRMWCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &sqlRMWOptions{}
	cmd := &cobra.Command{
		Use:    "sql-rmw --dsn DSN --prefix P --id ID [--fenced]",
		Short:  "One read-modify-write of a lock-safety run's SQL counter (run by lock-safety --lock pg-advisory)",
		Hidden: true,
		Long: `With --fenced, fence the scope "safety" with $COORD_FENCING_TOKEN (fencing/sqlfence);
read the counter of the run whose tables are under --prefix, wait --work, write the
value + 1 tagged with ID.TOKEN (fenced: in sqlfence's transaction); print what
happened as one JSON line. Exit 5 if the write was refused as stale, 1 on other errors.`,
		Example: `  coordctl check pg-advisory-lock --dsn DSN --name N --sequence S -- coordctl check sql-rmw --dsn DSN --prefix coordkit_safety_1a2b3c4d --id x-1 --fenced`,
		Args:    cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheckSQLRMW(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.DSN, "dsn", "", "the run's PostgreSQL database")
	fl.StringVar(&opts.Prefix, "prefix", "", "the run's table prefix")
	fl.StringVar(&opts.ID, "id", "", "id stored with the write")
	fl.DurationVar(&opts.Work, "work", 0, "time between the read and the write")
	fl.BoolVar(&opts.Fenced, "fenced", false, "fence, and write through sqlfence with the token")
	fl.DurationVar(&f.Global.DialTimeout, "dial-timeout", cmdutil.DefaultDialTimeout, "time to wait for the database to answer")
	return cmd
}

func runCheckSQLRMW(ctx context.Context, f *cmdutil.Factory, opts *sqlRMWOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if opts.DSN == "" || opts.Prefix == "" || opts.ID == "" {
		return cmdutil.UsageErrorf("--dsn, --prefix and --id are required")
	}
	tok, err := cmdutil.ParseTokenFlag(f.Getenv(childproc.EnvFencingToken))
	if err != nil {
		return cmdutil.UsageErrorf("$%s: %v", childproc.EnvFencingToken, err)
	}
	c, err := safety.OpenSQLCounter(ctx, opts.DSN, opts.Prefix, opts.Fenced, f.Global.DialTimeout)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	res := c.RMW(ctx, opts.ID, uint64(tok), opts.Work)
	if err := p.Print(res); err != nil {
		return err
	}
	return rmwExit(res.Err())
}
