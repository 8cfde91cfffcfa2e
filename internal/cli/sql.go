package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql" // driver "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	"github.com/spf13/cobra"
	_ "modernc.org/sqlite" // driver "sqlite"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/fencing/sqlfence"
)

// sqlOptions are the flags every 'coordctl sql' command shares.
type sqlOptions struct {
	Driver string
	DSN    string
	Table  string
	Scope  string
	Token  string
	// Timeout bounds the whole run: connect, check, statements, commit.
	Timeout time.Duration
}

// sqlExecOptions are 'coordctl sql' itself: the fence check, then Statements.
type sqlExecOptions struct {
	sqlOptions
	Statements []string
}

func (o *sqlOptions) addConnFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&o.Driver, "driver", "", "database engine: sqlite, postgres or mysql (MariaDB too)")
	fl.StringVar(&o.DSN, "dsn", "", "data source name (sqlite: a file path or a file: URI; postgres: URL or key=value; mysql: user:pass@tcp(host:port)/db)")
	fl.StringVar(&o.Table, "table", sqlfence.DefaultTable, "name of the fence table (created on first use)")
	fl.DurationVar(&o.Timeout, "command-timeout", defaultCommandTimeout, "time limit of the whole run: connecting, the check, the statements and the commit")
}

func (o *sqlOptions) addScopeFlag(cmd *cobra.Command, f *factory) {
	cmd.Flags().StringVar(&o.Scope, "scope", envScope(f), "fencing scope: the lock or election name (default $COORD_FENCING_SCOPE, else $COORD_LOCK_NAME or $COORD_ELECTION)")
}

func (o *sqlOptions) addTokenFlag(cmd *cobra.Command, f *factory) {
	cmd.Flags().StringVar(&o.Token, "token", f.Getenv(envFencingToken), "fencing token, a positive integer (default $COORD_FENCING_TOKEN)")
}

const sqlLong = `Check a fencing token in your own database and run SQL statements in the
same transaction, so that they commit only if no newer holder of the scope
has written. The fence table (--table, default coordkit_fence, created on
first use) keeps one row per scope with its floor, the highest token
admitted; the check is the transaction's first statement:

  UPDATE coordkit_fence SET token = $tok, writes = writes + 1
  WHERE scope = $scope AND token <= $tok

Inside 'coordctl lock NAME -- CMD' (or 'elect', or the sidecar's child)
--token and --scope come from the environment: COORD_FENCING_TOKEN, and
COORD_FENCING_SCOPE, else COORD_LOCK_NAME or COORD_ELECTION. See
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
cannot be parsed is not printed at all.`

func newSQLCmd(f *factory) *cobra.Command {
	opts := &sqlExecOptions{}
	cmd := &cobra.Command{
		Use:   "sql --driver D --dsn DSN -e STATEMENT [-e STATEMENT]...",
		Short: "Run SQL statements fenced by a token, in one transaction",
		Long: sqlLong + `

'coordctl sql' runs the check and then each -e statement, in order, in one
transaction, and commits. It commits that transaction itself: a -e statement
that would end it or change how it commits (BEGIN, START TRANSACTION, COMMIT,
END, ROLLBACK, SET TRANSACTION, SET autocommit, XA, PREPARE TRANSACTION; on
MySQL also the statements that commit implicitly: CREATE, ALTER, DROP,
RENAME, TRUNCATE, LOCK TABLES, GRANT ...) is refused before anything runs,
also after a ';' inside one -e. SAVEPOINT, RELEASE and ROLLBACK TO are
allowed. Before committing it checks that the transaction the check opened
is still open and still the same (a savepoint set after the check remains; a
stored procedure might have committed it, and begun another): if not, exit 6.

Exit 0: committed. Exit 5: the token is below the scope's floor (a newer
holder has written): nothing was committed, the floor is named. Exit 1: any
other error (cannot connect, a statement failed): nothing was committed and
the floor did not move. Exit 6: the outcome is unknown — COMMIT was sent and
its answer lost (a timeout, a dropped connection), or statements ran outside
the fence: the writes and the floor may have been committed, so read them
before retrying (a retried 'SET n = n + 1' would count twice). Exit 2: bad
flags (a token of 0, -3 or abc, an empty or over-long scope, no -e, a
transaction-control statement, a DSN that cannot be parsed).

Prints 'ok scope=S token=T floor=F rows_affected=N,M'; with -w json
{"scope","token","floor","rows_affected":[N,M],"outcome":"committed"}, and on
exit 6 {"scope","token","outcome":"unknown" (or "outside_fence"),"error"}.
'sql fence' raises the floor without statements; 'sql floor' prints it.`,
		Example: `  # inside 'coordctl lock NAME -- ...': token and scope come from the lock
  coordctl lock jobs/report -- coordctl sql --driver postgres \
      --dsn postgres://app@db/app -e "UPDATE report SET body = 'new' WHERE id = 1"
  coordctl lock jobs/report -- coordctl sql --driver sqlite --dsn /var/lib/app/app.db \
      -e "UPDATE report SET body = 'new' WHERE id = 1" -e "DELETE FROM drafts"
  coordctl lock jobs/report -- coordctl sql --driver mysql --dsn 'app:secret@tcp(db:3306)/app' \
      -w json -e "UPDATE t SET n = n + 1"
  coordctl sql floor --driver sqlite --dsn /var/lib/app/app.db --scope jobs/report
  # by hand, with a token a lock gave you (a made-up high token would make
  # every later real holder's write exit 5 as stale)
  coordctl sql --driver sqlite --dsn app.db --scope jobs/report --token "$TOKEN" -e "..."`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := f.NotifyContext(cmd.Context())
			defer cancel()
			return runSQL(ctx, f, opts)
		},
	}
	opts.addConnFlags(cmd)
	opts.addScopeFlag(cmd, f)
	opts.addTokenFlag(cmd, f)
	cmd.Flags().StringArrayVarP(&opts.Statements, "execute", "e", nil, "a statement to run after the check (repeat for several; they run in order, in one transaction)")
	cmd.AddCommand(newSQLFenceCmd(f), newSQLFloorCmd(f))
	return cmd
}

// The outcomes 'coordctl sql' and 'sql fence' print with -w json.
const (
	outcomeCommitted = "committed"
	// outcomeUnknown: COMMIT was sent and its answer lost (exit 6).
	outcomeUnknown = "unknown"
	// outcomeOutside: statements ran outside the fenced transaction (exit 6).
	outcomeOutside = "outside_fence"
)

// sqlResult is what 'coordctl sql' and 'sql fence' print; its JSON is the contract.
type sqlResult struct {
	Scope        string        `json:"scope"`
	Token        fencing.Token `json:"token"`
	Floor        fencing.Token `json:"floor"`
	RowsAffected []int64       `json:"rows_affected"`
	Outcome      string        `json:"outcome"`
	fenceOnly    bool
}

// sqlUnknownResult is printed with -w json when the outcome is not known
// (exit 6): {"scope","token","outcome":"unknown"|"outside_fence","error"}.
type sqlUnknownResult struct {
	Scope   string        `json:"scope"`
	Token   fencing.Token `json:"token"`
	Outcome string        `json:"outcome"`
	Error   string        `json:"error"`
}

func (r sqlResult) WriteSimple(w io.Writer) error {
	line := fmt.Sprintf("ok scope=%s token=%d floor=%d", r.Scope, r.Token, r.Floor)
	if !r.fenceOnly {
		rows := make([]string, len(r.RowsAffected))
		for i, n := range r.RowsAffected {
			rows[i] = strconv.FormatInt(n, 10)
		}
		line += " rows_affected=" + strings.Join(rows, ",")
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// sqlConn is an open database with its fence.
type sqlConn struct {
	db      *sql.DB
	fence   *sqlfence.Fence
	dialect sqlfence.Dialect
	raw     string // the DSN as given, whose passwords errors must not show
	shown   string // the DSN with its password redacted
}

func (c *sqlConn) close() { _ = c.db.Close() }

// scrub removes the DSN's password from a driver's error text and keeps
// the error's identity (errors.Is/As still see the original).
func (c *sqlConn) scrub(err error) error { return sqlfence.Scrub(err, c.raw) }

// validate checks the connection flags; errors are usage errors.
func (o *sqlOptions) validate(needToken bool) (sqlfence.Dialect, string, fencing.Token, error) {
	d, dsn, err := o.validateConn()
	if err != nil {
		return 0, "", 0, err
	}
	if d == sqlfence.MySQL {
		// A second more than the run's deadline, which ends everything
		// else first; only COMMIT ignores that deadline.
		dsn = mysqlTimeouts(dsn, o.Timeout+time.Second)
	}
	if err := checkScopeFlag(o.Scope); err != nil {
		return 0, "", 0, err
	}
	var tok fencing.Token
	if needToken {
		if tok, err = parseTokenFlag(o.Token); err != nil {
			return 0, "", 0, err
		}
	}
	return d, dsn, tok, nil
}

// connect opens the database and checks, within ctx, that it answers.
// validateConn checks the flags of the connection: driver, DSN, timeout.
func (o *sqlOptions) validateConn() (sqlfence.Dialect, string, error) {
	if o.Driver == "" {
		return 0, "", usageErrorf("--driver is required: sqlite, postgres or mysql")
	}
	d, err := sqlfence.ParseDialect(o.Driver)
	if err != nil {
		return 0, "", usageErrorf("invalid --driver %q: want sqlite, postgres or mysql", o.Driver)
	}
	if strings.TrimSpace(o.DSN) == "" {
		return 0, "", usageErrorf("--dsn is required")
	}
	if o.Timeout <= 0 {
		return 0, "", usageErrorf("invalid --command-timeout %s: must be positive", o.Timeout)
	}
	dsn, err := sqlfence.NormalizeDSN(d, o.DSN)
	if err != nil {
		return 0, "", usageErrorf("invalid --dsn: %v", err)
	}
	return d, dsn, nil
}

func (o *sqlOptions) connect(ctx context.Context, d sqlfence.Dialect, dsn string) (*sqlConn, error) {
	c := &sqlConn{dialect: d, raw: o.DSN, shown: sqlfence.RedactDSN(o.DSN)}
	db, err := sql.Open(d.DriverName(), dsn)
	if err != nil {
		return nil, usageErrorf("invalid --dsn %s: %v", c.shown, c.scrub(err))
	}
	c.db = db
	if c.fence, err = sqlfence.New(db, d, sqlfence.WithTable(o.Table), sqlfence.WithSavepointCheck()); err != nil {
		c.close()
		return nil, usageErrorf("invalid --table: %v", err)
	}
	if err := db.PingContext(ctx); err != nil {
		c.close()
		return nil, fmt.Errorf("cannot connect to %s at %s: %w", d, c.shown, c.timeoutErr(ctx, err))
	}
	return c, nil
}

// timeoutErr turns a deadline into text naming --command-timeout (and not
// into context.DeadlineExceeded, which Main would explain as etcd's), and
// an interrupt into a failure (not context.Canceled, which exits 0).
func (c *sqlConn) timeoutErr(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("no answer within --command-timeout: %v", c.scrub(err))
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return mark(errFailed, fmt.Errorf("interrupted: %v", c.scrub(err)))
	}
	return c.scrub(err)
}

func runSQL(ctx context.Context, f *factory, opts *sqlExecOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	d, dsn, tok, err := opts.validate(true)
	if err != nil {
		return err
	}
	if len(opts.Statements) == 0 {
		return usageErrorf("give at least one statement with -e (to raise the floor alone: 'coordctl sql fence')")
	}
	for i, s := range opts.Statements {
		if strings.TrimSpace(s) == "" {
			return usageErrorf("statement %d (-e) is empty", i+1)
		}
		if name, ok := d.TransactionControl(s); ok {
			return usageErrorf("statement %d (-e %s) is transaction control (%s): 'coordctl sql' runs every -e statement in the one fenced transaction and commits it itself; a %s inside would end that transaction early and run the rest outside the fence", i+1, abbrev(s), name, name)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	c, err := opts.connect(ctx, d, dsn)
	if err != nil {
		return err
	}
	defer c.close()
	rows := make([]int64, 0, len(opts.Statements))
	err = c.fence.Do(ctx, opts.Scope, tok, func(tx *sql.Tx) error {
		for i, s := range opts.Statements {
			res, err := tx.ExecContext(ctx, s)
			if err != nil {
				return fmt.Errorf("statement %d (%s): %w", i+1, abbrev(s), err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				n = -1 // the driver cannot tell; the statement ran
			}
			rows = append(rows, n)
		}
		return nil
	})
	if err != nil {
		return c.doErr(ctx, p, opts.Scope, tok, err)
	}
	return p.Print(sqlResult{Scope: opts.Scope, Token: tok, Floor: tok, RowsAffected: rows, Outcome: outcomeCommitted})
}

// doErr explains an error of Fence.Do: a stale token as it is (exit 5); a
// lost answer to COMMIT, or statements that ran outside the fence, as an
// unknown outcome (exit 6, and with -w json an object saying so on
// stdout); anything else as nothing committed (exit 1).
func (c *sqlConn) doErr(ctx context.Context, p *printer, scope string, tok fencing.Token, err error) error {
	var outcome, what string
	switch {
	case errors.Is(err, fencing.ErrStale):
		return fmt.Errorf("%w; nothing was committed", err)
	case errors.Is(err, sqlfence.ErrCommitUnknown):
		outcome, what = outcomeUnknown, "commit outcome unknown"
	case errors.Is(err, sqlfence.ErrOutsideFence):
		outcome, what = outcomeOutside, "statements ran outside the fence"
	default:
		return fmt.Errorf("%s at %s: nothing was committed: %w", c.dialect, c.shown, c.timeoutErr(ctx, err))
	}
	err = mark(errUnknown, fmt.Errorf("%s at %s: %s: %w", c.dialect, c.shown, what, c.scrub(err)))
	if p.JSON() {
		if perr := p.Print(sqlUnknownResult{Scope: scope, Token: tok, Outcome: outcome, Error: err.Error()}); perr != nil {
			return errors.Join(err, perr)
		}
	}
	return err
}

// mysqlTimeouts adds readTimeout and writeTimeout of d to a
// go-sql-driver/mysql DSN that sets neither: its COMMIT does not follow
// the context, so without them a lost answer would be waited for until
// TCP gives up, past --command-timeout.
func mysqlTimeouts(dsn string, d time.Duration) string {
	if strings.Contains(dsn, "readTimeout=") || strings.Contains(dsn, "writeTimeout=") {
		return dsn
	}
	sep := "?"
	if strings.Contains(dsn[strings.LastIndexByte(dsn, '/')+1:], "?") {
		sep = "&"
	}
	return dsn + sep + "readTimeout=" + d.String() + "&writeTimeout=" + d.String()
}

func abbrev(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
