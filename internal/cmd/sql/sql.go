package sqlcli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/internal/childproc"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// EnvDSN names the variable --dsn defaults to: a DSN with a password in
// the environment is not on the command line, which every user of the
// machine can read (ps, /proc/PID/cmdline).
const EnvDSN = "COORDCTL_SQL_DSN"

// sqlOptions are the flags of the sql commands, bound to the request they
// make, and the text of --token, which runSQL parses.
type sqlOptions struct {
	Request
	token string
}

func (o *sqlOptions) addConnFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&o.Driver, "driver", "", "database engine: sqlite, postgres or mysql (MariaDB too)")
	// Not the variable's value as the flag's default: help would print it.
	fl.StringVar(&o.DSN, "dsn", "", "data source name (sqlite: a file path or a file: URI; postgres: URL or key=value; mysql: user:pass@tcp(host:port)/db) (default $"+EnvDSN+": a password there is not on the command line, which every user of the machine can read)")
	fl.StringVar(&o.Table, "table", sqlfence.DefaultTable, "name of the fence table (created on first use)")
	fl.DurationVar(&o.Timeout, "command-timeout", cmdutil.DefaultCommandTimeout, "time limit of the whole run: connecting, the check, the statements and the commit")
}

func (o *sqlOptions) addScopeFlag(cmd *cobra.Command, f *cmdutil.Factory) {
	cmd.Flags().StringVar(&o.Scope, "scope", cmdutil.EnvScope(f), "fencing scope: where the held key lives in etcd, PREFIX+NAME/ for a lock or an election, PREFIX+NAME/slots/I for a semaphore's slot (default $COORD_FENCING_SCOPE, which every hold sets)")
}

func (o *sqlOptions) addTokenFlag(cmd *cobra.Command, f *cmdutil.Factory) {
	cmd.Flags().StringVar(&o.token, "token", f.Getenv(childproc.EnvFencingToken), "fencing token, a positive integer (default $COORD_FENCING_TOKEN)")
}

const sqlLong = `Check a fencing token in your own database and run SQL statements in the
same transaction, so that they commit only if no newer holder of the scope
has written. The fence table (--table, default coordkit_fence, created on
first use) keeps one row per scope with its floor, the highest token
admitted; the check is the transaction's first statement:

  UPDATE coordkit_fence SET token = $tok, writes = writes + 1
  WHERE scope = $scope AND token <= $tok

or, when the token equals the floor, a shared lock on the row instead of a
write (SELECT ... FOR SHARE; MySQL LOCK IN SHARE MODE), which a raise by a
higher token waits for. On MySQL/MariaDB the table must be InnoDB.

Inside 'coordctl lock NAME -- CMD' (or 'elect', or the sidecar's child)
--token and --scope come from the environment: COORD_FENCING_TOKEN and
COORD_FENCING_SCOPE (where the held key lives in etcd: PREFIX+NAME/ for a
lock or an election, PREFIX+NAME/slots/I for a semaphore's slot; the name
alone is no scope, it leaves the prefix out). See
docs/fencing.md, "Fencing your own database".

Drivers: sqlite (modernc.org/sqlite, no cgo), postgres (pgx), mysql
(go-sql-driver/mysql; MariaDB too). For sqlite --dsn is a file path, turned
into file:PATH?_txlock=immediate&_pragma=busy_timeout(10000): every
transaction takes SQLite's write lock at BEGIN (without it the check is not
safe) and waits up to 10s for it. A file: URI is used as given, with
_txlock=immediate and the busy timeout added when missing; a URI that asks
for _txlock=deferred is refused, and so is an in-memory database.

--command-timeout bounds the whole run: connecting, the check, the
statements and the commit (for mysql, plus a second, it also becomes the
DSN's readTimeout and writeTimeout unless the DSN sets one: go-sql-driver's
COMMIT does not follow a deadline). Passwords in a DSN are never printed, and a DSN that
cannot be parsed is not printed at all. Without --dsn the DSN is read from
$COORDCTL_SQL_DSN: put one with a password there, not on the command line,
which every user of the machine can read (ps).`

// NewCmd returns the command coordctl sql.
func NewCmd(f *cmdutil.Factory) *cobra.Command { return newSQLCmdRun(f, Run) }

// sqlRunF is what the sql commands run: Run, or in tests a recorder
// of the requests the flags made (cli/cli's runF).
type sqlRunF = func(context.Context, Request) (Result, error)

func newSQLCmdRun(f *cmdutil.Factory, run sqlRunF) *cobra.Command {
	opts := &sqlOptions{}
	cmd := &cobra.Command{
		Use:   "sql --driver D --dsn DSN -e STATEMENT [-e STATEMENT]...",
		Short: "Run SQL statements fenced by a token, in one transaction",
		Long: sqlLong + `

'coordctl sql' runs the check and then each -e statement, in order, in one
transaction, and commits. It commits that transaction itself: a -e statement
that would end it or change how it commits (BEGIN, START TRANSACTION, COMMIT,
END, ROLLBACK, SET TRANSACTION, SET autocommit, XA, PREPARE TRANSACTION; on
MySQL also the statements that commit implicitly: CREATE, ALTER, DROP,
RENAME, TRUNCATE, LOCK TABLES, GRANT ..., and SET STATEMENT ... FOR them) is
refused before anything runs, also after a ';' inside one -e; with
multiStatements=true in a MySQL DSN an -e holding more than one statement is
refused (give each its own -e). A -e that names the fence table (--table)
is refused too: statements must not move the floors they are fenced by.
SAVEPOINT, RELEASE and ROLLBACK TO are allowed. Before committing it checks
that the transaction the check opened is still open and still the same (a
savepoint set after the check remains; a stored procedure might have
committed it, and begun another): if not, exit 6. It then reads the scope's
fence row again: if a statement moved it (through a view, a trigger, a
procedure), it rolls back and exits 1, so the floor printed is always the
one committed. On MySQL/MariaDB a fence table that is not InnoDB (made
beforehand as MyISAM, Aria, MEMORY) is refused before any statement runs,
naming its engine: exit 1.

Exit 0: committed. Exit 5: the token is below the scope's floor (a newer
holder has written): nothing was committed, the floor is named. Exit 1: any
other error (cannot connect, a statement failed, a fence table that is not
transactional, a statement that moved the fence row): rolled back, nothing
was committed in transactional tables, and the floor did not move (a MySQL
MyISAM or Aria table a statement wrote to keeps its rows: no engine rolls
those back). Exit 6: the outcome is unknown — COMMIT was sent and
its answer lost (a timeout, a dropped connection), or statements ran outside
the fence: the writes and the floor may have been committed, so read them
before retrying (a retried 'SET n = n + 1' would count twice). Exit 2: bad
flags (a token of 0, -3 or abc, an empty or over-long scope, no -e, a
transaction-control statement, a statement naming the fence table, a DSN
that cannot be parsed).

Prints 'ok scope=S token=T floor=F rows_affected=N,M'; with -w json
{"scope","token","floor","rows_affected":[N,M],"outcome":"committed"}, and on
exit 6 {"scope","token","outcome":"unknown" (or "outside_fence"),"error"}.
'sql fence' raises the floor without statements; 'sql floor' prints it.`,
		Example: `  # inside 'coordctl lock NAME -- ...': token and scope come from the lock
  coordctl lock jobs/report -- coordctl sql --driver postgres \
      --dsn postgres://app@db/app -e "UPDATE report SET body = 'new' WHERE id = 1"
  coordctl lock jobs/report -- coordctl sql --driver sqlite --dsn /var/lib/app/app.db \
      -e "UPDATE report SET body = 'new' WHERE id = 1" -e "DELETE FROM drafts"
  # a password goes in the environment, not on the command line (ps shows that)
  export COORDCTL_SQL_DSN='app:secret@tcp(db:3306)/app'
  coordctl lock jobs/report -- coordctl sql --driver mysql -w json -e "UPDATE t SET n = n + 1"
  coordctl sql floor --driver sqlite --dsn /var/lib/app/app.db --scope jobs/report/
  # by hand, with a token a lock gave you (a made-up high token would make
  # every later real holder's write exit 5 as stale)
  coordctl sql --driver sqlite --dsn app.db --scope jobs/report/ --token "$TOKEN" -e "..."`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, _ *cobra.Command, _ []string) error {
			return runSQL(ctx, f, run, opts, Exec)
		}),
	}
	opts.addConnFlags(cmd)
	opts.addScopeFlag(cmd, f)
	opts.addTokenFlag(cmd, f)
	cmd.Flags().StringArrayVarP(&opts.Statements, "execute", "e", nil, "a statement to run after the check (repeat for several; they run in order, in one transaction)")
	cmd.AddCommand(newSQLFenceCmd(f, run), newSQLFloorCmd(f, run))
	return cmd
}

// runSQL checks the flags in the order coordctl always has (connection,
// scope, token, statements), runs op and prints its result; with -w json
// an unknown outcome (exit 6) is printed as an object too.
func runSQL(ctx context.Context, f *cmdutil.Factory, run sqlRunF, o *sqlOptions, op Op) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	// A closed stdout or stderr (coordctl sql ... 2>&1 | true) must not turn
	// a commit or an unknown outcome into death by SIGPIPE: the exit says what
	// happened to the transaction. SIGPIPE stays caught until coordctl exits,
	// for the error printed after runSQL returns.
	_ = f.HoldOutput(p)
	req := o.Request
	req.Op = op
	if req.DSN == "" {
		req.DSN = f.Getenv(EnvDSN)
	}
	if err := req.Config.Validate(); err != nil {
		return &cmdutil.UsageError{Err: err}
	}
	if op == HighestFloor {
		req.Scope = ""
	} else if err := cmdutil.CheckScopeFlag(req.Scope); err != nil {
		return err
	}
	if op == Exec || op == Fence {
		if req.Token, err = cmdutil.ParseTokenFlag(o.token); err != nil {
			return err
		}
	}
	if err := req.Validate(); err != nil {
		return err // *cmdutil.UsageError
	}
	res, err := run(ctx, req)
	var oe *OutcomeError
	if errors.As(err, &oe) && p.JSON() {
		if perr := p.Print(oe); perr != nil {
			return errors.Join(err, perr)
		}
	}
	if err != nil {
		return err // fencing.ErrStale: exit 5; sqlfence.ErrCommitUnknown, ErrOutsideFence: exit 6
	}
	return p.Print(cmdutil.TextOutput{V: res})
}

// ---- sql fence and sql floor: a scope's fence row, raised or read, without a write ----

func newSQLFenceCmd(f *cmdutil.Factory, run sqlRunF) *cobra.Command {
	opts := &sqlOptions{}
	cmd := &cobra.Command{
		Use:   "fence --driver D --dsn DSN [--scope S] [--token T]",
		Short: "Raise a scope's floor in the database to a token, without other writes",
		Long: `Run the fence check alone: the scope's floor rises to --token, so that
from now on every lower token is refused. A new holder fences before its
first write, closing the window in which its predecessor could still write.
Exit 5 when the token is below the floor already (nothing changed), 6 when
the answer to COMMIT was lost (the floor may have risen), 1 on any other
error, 2 for bad flags. Give it only a token a lock or election gave
you: a made-up high token would make every later real holder's write exit 5. Prints 'ok scope=S token=T floor=F'; with -w
json {"scope","token","floor"}.

` + sqlLong,
		Example: `  # a new holder fences before its first write; token and scope come from the lock
  coordctl lock jobs/report -- sh -c 'coordctl sql fence --driver postgres --dsn "$DB" && ./job.sh'
  coordctl lock jobs/report -- coordctl sql fence --driver sqlite --dsn /var/lib/app/app.db`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, _ *cobra.Command, _ []string) error {
			return runSQL(ctx, f, run, opts, Fence)
		}),
	}
	opts.addConnFlags(cmd)
	opts.addScopeFlag(cmd, f)
	opts.addTokenFlag(cmd, f)
	return cmd
}

func newSQLFloorCmd(f *cmdutil.Factory, run sqlRunF) *cobra.Command {
	opts := &sqlOptions{}
	var all bool
	cmd := &cobra.Command{
		Use:   "floor --driver D --dsn DSN (--scope S | --all)",
		Short: "Print a scope's floor: the highest token the database admitted",
		Long: `Print the floor of --scope in the fence table: the highest token admitted,
0 if none. It is a plain read, outdated as soon as it is printed; the
decision belongs to 'coordctl sql'. With -w json {"scope","floor"}.

--all prints the highest floor of every scope (and, with -w json, its
scope): after etcd is restored from a snapshot or rebuilt, its revision must
be bumped above it ('etcdutl snapshot restore --bump-revision N
--mark-compacted', docs/operations.md).

` + sqlLong,
		Example: `  coordctl sql floor --driver sqlite --dsn /var/lib/app/app.db --scope jobs/report/
  coordctl sql floor --driver postgres --dsn "$DB" --scope jobs/report/ -w json
  coordctl sql floor --driver postgres --dsn "$DB" --all   # the highest floor of all scopes`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			if !all {
				return runSQL(ctx, f, run, opts, Floor)
			}
			if cmd.Flags().Changed("scope") {
				return cmdutil.UsageErrorf("--all and --scope exclude each other")
			}
			return runSQL(ctx, f, run, opts, HighestFloor)
		}),
	}
	opts.addConnFlags(cmd)
	opts.addScopeFlag(cmd, f)
	cmd.Flags().BoolVar(&all, "all", false, "print the highest floor of all scopes (to choose etcd's --bump-revision after a restore)")
	return cmd
}
