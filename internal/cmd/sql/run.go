package sqlcli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"   // also driver "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	_ "modernc.org/sqlite"             // driver "sqlite"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// Errors of a run. Match them with errors.Is.
var (
	// ErrInterrupted is wrapped when the context was cancelled (SIGINT)
	// before the run finished: nothing was committed.
	ErrInterrupted = errors.New("interrupted")
)

// Op is what a run does.
type Op int

const (
	// Exec runs the fence check and then Request.Statements in one
	// transaction ('coordctl sql').
	Exec Op = iota + 1
	// Fence runs the check alone, raising the floor ('sql fence').
	Fence
	// Floor reads the floor of Request.Scope ('sql floor').
	Floor
	// HighestFloor reads the highest floor of all scopes ('sql floor --all').
	HighestFloor
)

// Config is the connection: --driver, --dsn, --table, --command-timeout.
type Config struct {
	// Driver is sqlite, postgres or mysql (MariaDB too).
	Driver string
	// DSN is the data source name as the user gave it (sqlfence.NormalizeDSN).
	DSN string
	// Table is the fence table, as --table gives it (its default is
	// sqlfence.DefaultTable; an empty name is refused).
	Table string
	// Timeout bounds the whole run: connect, check, statements, commit.
	Timeout time.Duration
}

// Request is one run.
type Request struct {
	Config
	Op Op
	// Scope and Token are the fence's; Token is unused by Floor, and Scope
	// by HighestFloor. sqlfence checks both.
	Scope string
	Token fencing.Token
	// Statements are Exec's, run in order.
	Statements []string
}

// usagef is a bad flag (a driver, DSN, timeout, table or statement that
// cannot be used): coordctl's one usage error, exit 2.
func usagef(format string, args ...any) error { return cmdutil.UsageErrorf(format, args...) }

// Validate checks the connection flags; errors are *cmdutil.UsageError.
func (c Config) Validate() error {
	_, _, err := c.normalize()
	return err
}

// normalize returns the dialect and the DSN the driver is given.
func (c Config) normalize() (sqlfence.Dialect, string, error) {
	if c.Driver == "" {
		return 0, "", usagef("--driver is required: sqlite, postgres or mysql")
	}
	d, err := sqlfence.ParseDialect(c.Driver)
	if err != nil {
		return 0, "", usagef("invalid --driver %q: want sqlite, postgres or mysql", c.Driver)
	}
	if strings.TrimSpace(c.DSN) == "" {
		return 0, "", usagef("--dsn is required (or $" + EnvDSN + ")")
	}
	if c.Timeout <= 0 {
		return 0, "", usagef("invalid --command-timeout %s: must be positive", c.Timeout)
	}
	dsn, err := sqlfence.NormalizeDSN(d, c.DSN)
	if err != nil {
		return 0, "", usagef("invalid --dsn: %v", err)
	}
	if d == sqlfence.MySQL {
		// A second more than the run's deadline, which ends everything
		// else first; only COMMIT ignores that deadline.
		dsn = mysqlTimeouts(dsn, c.Timeout+time.Second)
	}
	return d, dsn, nil
}

// Validate checks the connection and, for Exec, the statements: at least
// one, none empty, none transaction control (they run in the one fenced
// transaction, which Run commits itself), none naming the fence table
// (anywhere in its text: a statement must not move the floors it is
// fenced by; what the text cannot show, sqlfence's re-check before COMMIT
// catches for the scope's own row). Errors are *cmdutil.UsageError.
//
// On MySQL with multiStatements=true in the DSN, an -e holding more than
// one statement is refused too: the server reads each statement of such a
// text with the settings the one before it set (sql_mode, the character
// set), so no reading of the text can be sure where a COMMIT hides in it
// (the savepoint check would report it afterwards as outside the fence, but
// by then it ran). One statement per -e leaves nothing to hide.
func (r Request) Validate() error {
	d, dsn, err := r.normalize()
	if err != nil || r.Op != Exec {
		return err
	}
	if len(r.Statements) == 0 {
		return usagef("give at least one statement with -e (to raise the floor alone: 'coordctl sql fence')")
	}
	multi := d == sqlfence.MySQL && mysqlMultiStatements(dsn)
	for i, s := range r.Statements {
		if strings.TrimSpace(s) == "" {
			return usagef("statement %d (-e) is empty", i+1)
		}
		if name, ok := d.TransactionControl(s); ok {
			return usagef("statement %d (-e %s) is transaction control (%s): 'coordctl sql' runs every -e statement in the one fenced transaction and commits it itself; a %s inside would end that transaction early and run the rest outside the fence", i+1, abbrev(s), name, name)
		}
		if fenceTableNamed(s, r.Table) {
			return usagef("statement %d (-e %s) names the fence table %s: a statement must not read or write the floors it is fenced by (one that moves its own scope's row is rolled back anyway: sqlfence.ErrFenceMoved; another scope's row it could lower unseen)", i+1, abbrev(s), r.Table)
		}
		if multi && strings.Contains(strings.TrimRight(s, " \t\r\n;"), ";") {
			return usagef("statement %d (-e %s) holds more than one statement and the DSN has multiStatements=true: give each statement its own -e, or drop multiStatements from the DSN (the server reads each statement of one text with the settings the one before it set, so a COMMIT could hide in it; a ';' inside a string counts too)", i+1, abbrev(s))
		}
	}
	return nil
}

// Run validates r, opens the database within r.Timeout, does r.Op and
// closes it. The package doc lists its errors.
func Run(ctx context.Context, r Request) (Result, error) {
	if err := r.Validate(); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	c, err := open(ctx, r.Config)
	if err != nil {
		return Result{}, err
	}
	defer c.db.Close()
	res := Result{Op: r.Op, Scope: r.Scope, Token: r.Token, Floor: r.Token}
	switch r.Op {
	case Exec:
		res.RowsAffected, err = c.exec(ctx, r.Scope, r.Token, r.Statements)
	case Fence:
		err = c.fence.Fence(ctx, r.Scope, r.Token)
	case Floor:
		res.Token = 0
		res.Floor, err = c.fence.Floor(ctx, r.Scope)
	case HighestFloor:
		res.Token = 0
		res.Scope, res.Floor, err = c.fence.HighestFloor(ctx)
	default:
		return Result{}, fmt.Errorf("sql: unknown op %d", r.Op)
	}
	if err != nil {
		return Result{}, c.runErr(ctx, r, err)
	}
	if r.Op == Exec || r.Op == Fence {
		res.Outcome = Committed
	}
	return res, nil
}

// conn is an open database with its fence.
type conn struct {
	db      *sql.DB
	fence   *sqlfence.Fence
	dialect sqlfence.Dialect
	raw     string // the DSN as given, whose passwords errors must not show
	shown   string // the DSN with its password redacted
}

// open opens the database and checks, within ctx, that it answers.
func open(ctx context.Context, cfg Config) (*conn, error) {
	d, dsn, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	c := &conn{dialect: d, raw: cfg.DSN, shown: sqlfence.RedactDSN(cfg.DSN)}
	if c.db, err = sql.Open(d.DriverName(), dsn); err != nil {
		return nil, usagef("invalid --dsn %s: %v", c.shown, c.scrub(err))
	}
	if c.fence, err = sqlfence.New(c.db, d, sqlfence.WithTable(cfg.Table), sqlfence.WithSavepointCheck(), sqlfence.WithRecheck()); err != nil {
		_ = c.db.Close()
		return nil, usagef("invalid --table: %v", err)
	}
	if err := c.db.PingContext(ctx); err != nil {
		_ = c.db.Close()
		return nil, fmt.Errorf("cannot connect to %s at %s: %w", d, c.shown, c.timeoutErr(ctx, err))
	}
	return c, nil
}

// exec runs the statements after the check, in one transaction, and
// returns each one's rows affected (-1 where the driver cannot tell).
func (c *conn) exec(ctx context.Context, scope string, tok fencing.Token, statements []string) ([]int64, error) {
	rows := make([]int64, 0, len(statements))
	err := c.fence.Do(ctx, scope, tok, func(tx *sql.Tx) error {
		for i, s := range statements {
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
	return rows, err
}

// scrub removes the DSN's password from a driver's error text and keeps
// the error's identity (errors.Is/As still see the original).
func (c *conn) scrub(err error) error { return sqlfence.Scrub(err, c.raw) }

// timeoutErr turns a deadline into text naming --command-timeout (and not
// into context.DeadlineExceeded, which coordctl would explain as etcd's),
// and an interrupt into ErrInterrupted (not context.Canceled, which exits 0).
func (c *conn) timeoutErr(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("no answer within --command-timeout: %v", c.scrub(err))
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return fmt.Errorf("%w: %v", ErrInterrupted, c.scrub(err))
	}
	return c.scrub(err)
}

// runErr explains an error of r.Op: a stale token as it is; a lost answer
// to COMMIT, or statements that ran outside the fence, as an *OutcomeError;
// anything else as nothing committed.
func (c *conn) runErr(ctx context.Context, r Request, err error) error {
	if r.Op == Floor || r.Op == HighestFloor {
		return fmt.Errorf("%s at %s: %w", c.dialect, c.shown, c.timeoutErr(ctx, err))
	}
	var outcome, what string
	switch {
	case errors.Is(err, fencing.ErrStale):
		return fmt.Errorf("%w; nothing was committed", err)
	case errors.Is(err, sqlfence.ErrCommitUnknown):
		outcome, what = Unknown, "commit outcome unknown"
	case errors.Is(err, sqlfence.ErrOutsideFence):
		outcome, what = OutsideFence, "statements ran outside the fence"
	case errors.Is(err, sqlfence.ErrNotTransactional):
		// Refused before the check: no statement ran.
		return fmt.Errorf("%s at %s: refused before any statement ran, nothing was written: %w", c.dialect, c.shown, c.scrub(err))
	case errors.Is(err, sqlfence.ErrFenceMoved):
		return fmt.Errorf("%s at %s: %w", c.dialect, c.shown, c.scrub(err))
	default:
		// A rollback undoes what transactional tables hold; a MySQL
		// MyISAM or Aria table a statement wrote keeps its rows.
		return fmt.Errorf("%s at %s: rolled back, nothing was committed in transactional tables: %w", c.dialect, c.shown, c.timeoutErr(ctx, err))
	}
	return &OutcomeError{Scope: r.Scope, Token: r.Token, Outcome: outcome,
		Err: fmt.Errorf("%s at %s: %s: %w", c.dialect, c.shown, what, c.scrub(err))}
}

// fenceTableNamed reports whether statement s holds the fence table's
// name (its last part, without a schema) as a word, in any case, quoted
// or not, in a string or a comment too: reading it out of dynamic SQL
// would need what the text does not show, so any mention refuses.
func fenceTableNamed(s, table string) bool {
	name := strings.ToLower(table[strings.LastIndexByte(table, '.')+1:])
	if name == "" {
		return false
	}
	low := strings.ToLower(s)
	word := func(c byte) bool {
		return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 0x80
	}
	for i := 0; ; {
		j := strings.Index(low[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !word(low[start-1])) && (end == len(low) || !word(low[end])) {
			return true
		}
		i = start + 1
	}
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

// abbrev is s on one line, at most 60 bytes.
func abbrev(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// mysqlMultiStatements reports whether a go-sql-driver DSN turns on
// multiStatements (several statements in one query).
func mysqlMultiStatements(dsn string) bool {
	cfg, err := mysql.ParseDSN(dsn)
	return err == nil && cfg.MultiStatements
}
