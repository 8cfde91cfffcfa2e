package sqlfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"github.com/coordkit/coordkit/fencing"
)

// DefaultTable is the fence table's name unless WithTable says otherwise.
const DefaultTable = "coordkit_fence"

// maxScopeBytes is the scope column's size; longer scopes are refused
// before any statement runs.
const maxScopeBytes = fencing.MaxScopeLen

// maxAttempts bounds the check's retries (a missing row, then a row that
// changed between the check and the read of the floor).
const maxAttempts = 4

// Fence checks fencing tokens in a SQL database, in the caller's own
// transaction. It is safe for concurrent use; several Fences (in one or
// many processes) may share a table.
type Fence struct {
	db      *sql.DB
	dialect Dialect
	table   string
	txOpts  *sql.TxOptions
	st      statements

	mu      sync.Mutex
	created bool
}

// Option configures a Fence.
type Option func(*Fence)

// WithTable sets the fence table's name (default DefaultTable). It must be
// an identifier — letters, digits and underscores, not starting with a
// digit, at most 63 bytes — or schema.identifier; New returns
// ErrInvalidTable otherwise. It is used unquoted, so PostgreSQL folds it to
// lower case.
func WithTable(name string) Option { return func(f *Fence) { f.table = name } }

// WithTxOptions sets the options of the transactions Do and Fence begin
// (default nil: the driver's default isolation level). See the package doc
// for what a stricter level changes.
func WithTxOptions(opts *sql.TxOptions) Option { return func(f *Fence) { f.txOpts = opts } }

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$`)

// New returns a Fence on db for the given dialect. It does no I/O: the
// table is created on first use. Errors: ErrNilDB, ErrUnknownDialect,
// ErrInvalidTable, ErrReadOnly.
func New(db *sql.DB, dialect Dialect, opts ...Option) (*Fence, error) {
	f := &Fence{db: db, dialect: dialect, table: DefaultTable}
	for _, o := range opts {
		o(f)
	}
	switch {
	case db == nil:
		return nil, ErrNilDB
	case !dialect.valid():
		return nil, fmt.Errorf("%w: %v", ErrUnknownDialect, dialect)
	case !identRE.MatchString(f.table):
		return nil, fmt.Errorf("%w %q: want an identifier of letters, digits and _ (schema.table allowed)", ErrInvalidTable, f.table)
	case f.txOpts != nil && f.txOpts.ReadOnly:
		return nil, ErrReadOnly
	}
	f.st = dialect.statements(f.table)
	return f, nil
}

// Table returns the fence table's name.
func (f *Fence) Table() string { return f.table }

// Dialect returns the Fence's dialect.
func (f *Fence) Dialect() Dialect { return f.dialect }

// CheckStatement returns the one statement that checks a token, with the
// dialect's placeholders for token, scope and token again, in that order.
func (f *Fence) CheckStatement() string { return f.st.check }

// ensureTable creates the table once per Fence, outside any transaction
// (MySQL commits the open transaction on DDL).
func (f *Fence) ensureTable(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.created {
		return nil
	}
	if _, err := f.db.ExecContext(ctx, f.st.create); err != nil {
		// Two sessions creating the table at once can make PostgreSQL fail
		// one of them on its catalog's unique index; the table is there.
		if _, perr := f.db.ExecContext(ctx, f.st.probe); perr != nil {
			return fmt.Errorf("sqlfence: create table %s: %w", f.table, err)
		}
	}
	f.created = true
	return nil
}

func checkArgs(scope string, token fencing.Token) error {
	if !token.Valid() {
		return fmt.Errorf("%w: %d (want 1..%d)", fencing.ErrInvalidToken, token, fencing.MaxToken)
	}
	return fencing.ValidateScope(scope)
}

// Do runs fn in one transaction after admitting token in scope, and commits.
// The check — the first statement of the transaction — raises the scope's
// floor to token if token is not below it, and holds the scope's row lock
// until the transaction ends, so fn's writes commit only if no higher token
// was admitted in between.
//
// Do returns a *fencing.StaleError (matching fencing.ErrStale, Floor read in
// the same transaction) if token is below the floor: nothing is written and
// fn is not called. If fn returns an error or panics, the transaction is
// rolled back (the floor does not move) and the error is returned wrapped.
// Bad arguments give errors wrapping fencing.ErrInvalidToken or
// fencing.ErrInvalidScope before any I/O. Other errors come from the
// database. When COMMIT was sent and no answer came back, Do returns an
// error wrapping ErrCommitUnknown: the writes and the floor may or may not
// be committed. Every other error means nothing was committed, except
// ErrOutsideFence.
//
// fn must use tx for the writes that need fencing, and must not commit or
// roll it back: if at fn's end the connection is no longer in the
// transaction the check opened (fn ran COMMIT or ROLLBACK, or on MySQL a
// statement that commits implicitly), Do returns an error wrapping
// ErrOutsideFence (and fn's own error, if any): statements after that
// point ran outside the fence and may have been committed without it.
func (f *Fence) Do(ctx context.Context, scope string, token fencing.Token, fn func(tx *sql.Tx) error) error {
	if err := checkArgs(scope, token); err != nil {
		return err
	}
	if err := f.ensureTable(ctx); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		done, err := f.attempt(ctx, scope, token, fn)
		if done || err != nil {
			return err
		}
		if attempt == maxAttempts {
			return fmt.Errorf("%w: scope %q token %d after %d attempts", ErrUnsettled, scope, token, attempt)
		}
	}
}

// Fence admits token in scope without other writes: the floor rises to
// token unless it is higher already (then a *fencing.StaleError). Use it
// when a new holder takes over, so that its predecessor's late writes are
// refused before the new holder writes anything, as the reference store's
// POST /v1/fence. Errors as Do.
func (f *Fence) Fence(ctx context.Context, scope string, token fencing.Token) error {
	return f.Do(ctx, scope, token, func(*sql.Tx) error { return nil })
}

// Floor returns the scope's floor: the highest token admitted, 0 if none.
// It is a plain read and may be outdated as soon as it returns; decisions
// belong in Do. Errors: fencing.ErrInvalidScope, or the database's.
func (f *Fence) Floor(ctx context.Context, scope string) (fencing.Token, error) {
	if err := fencing.ValidateScope(scope); err != nil {
		return 0, err
	}
	if err := f.ensureTable(ctx); err != nil {
		return 0, err
	}
	floor, _, err := readFloor(ctx, f.db, f.st.floor, scope)
	return floor, err
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func readFloor(ctx context.Context, q querier, stmt, scope string) (fencing.Token, bool, error) {
	var floor int64
	err := q.QueryRowContext(ctx, stmt, scope).Scan(&floor)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("sqlfence: read floor of %q: %w", scope, err)
	case floor < 0:
		return 0, true, fmt.Errorf("%w: negative floor %d for scope %q", ErrBadTable, floor, scope)
	}
	return fencing.Token(floor), true, nil
}

// attempt runs one transaction. done is true when Do has its answer (err
// nil: committed), false when the check must run again. It runs on one
// connection of its own (db.Conn) so that, before the commit, it can ask
// the driver whether that connection is still in the transaction the
// check opened (stillFenced).
func (f *Fence) attempt(ctx context.Context, scope string, token fencing.Token, fn func(*sql.Tx) error) (done bool, err error) {
	conn, err := f.db.Conn(ctx)
	if err != nil {
		return true, fmt.Errorf("sqlfence: connect: %w", err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, f.txOpts)
	if err != nil {
		return true, fmt.Errorf("sqlfence: begin: %w", err)
	}
	finished := false
	defer func() {
		if !finished {
			_ = tx.Rollback() // the error, if any, is not the one to report
		}
	}()
	res, err := tx.ExecContext(ctx, f.st.check, int64(token), scope, int64(token))
	if err != nil {
		return true, fmt.Errorf("sqlfence: check scope %q token %d: %w", scope, token, err)
	}
	rows, err := res.RowsAffected()
	if err != nil {
		return true, fmt.Errorf("sqlfence: check scope %q: rows affected: %w", scope, err)
	}
	var floor fencing.Token
	var exists bool
	if rows == 0 {
		if floor, exists, err = readFloor(ctx, tx, f.st.floor, scope); err != nil {
			return true, err
		}
	}
	switch decide(rows, exists, floor, token) {
	case admitted:
	case stale:
		return true, &fencing.StaleError{Scope: scope, Token: token, Floor: floor}
	case missing:
		// The row is created outside the transaction, which is rolled
		// back first: a concurrent creator's duplicate is harmless, and
		// the row, once there, stays.
		finished = true
		_ = tx.Rollback()
		if _, err := f.db.ExecContext(ctx, f.st.insert, scope); err != nil {
			return true, fmt.Errorf("sqlfence: create row of scope %q: %w", scope, err)
		}
		return false, nil
	case again:
		return false, nil
	default:
		return true, fmt.Errorf("%w: check of scope %q affected %d rows", ErrBadTable, scope, rows)
	}
	if err := fn(tx); err != nil {
		if ferr := f.stillFenced(ctx, conn, tx); errors.Is(ferr, ErrOutsideFence) && !(f.dialect == MySQL && mysqlDeadlock(err)) {
			return true, fmt.Errorf("sqlfence: scope %q token %d: %w, then fn failed: %w", scope, token, ferr, err)
		}
		return true, fmt.Errorf("sqlfence: scope %q token %d: rolled back: %w", scope, token, err)
	}
	if err := f.stillFenced(ctx, conn, tx); err != nil {
		return true, fmt.Errorf("sqlfence: scope %q token %d: %w", scope, token, err)
	}
	if err := ctx.Err(); err != nil {
		return true, fmt.Errorf("sqlfence: scope %q token %d: rolled back before the commit: %w", scope, token, err)
	}
	finished = true // from here on a Rollback can only fail
	if err := tx.Commit(); err != nil {
		return true, f.commitErr(ctx, conn, scope, token, err)
	}
	return true, nil
}

// commitErr explains an error of COMMIT: not committed when the database
// answered with an error (or database/sql had ended the transaction before
// sending COMMIT), ErrCommitUnknown when no answer came.
func (f *Fence) commitErr(ctx context.Context, conn *sql.Conn, scope string, token fencing.Token, err error) error {
	if commitRefused(f.dialect, err) {
		if f.dialect == SQLite {
			// A refused COMMIT (SQLITE_BUSY) leaves SQLite's transaction
			// open on the connection; database/sql has let go of it.
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
		return fmt.Errorf("sqlfence: commit scope %q token %d: not committed: %w", scope, token, err)
	}
	return fmt.Errorf("%w: scope %q token %d: COMMIT was sent and no answer came back, so the writes and the floor %d may or may not be committed (read them before retrying): %w",
		ErrCommitUnknown, scope, token, token, err)
}

// commitRefused reports whether err, returned by COMMIT, says for certain
// that nothing was committed: database/sql ended the transaction before
// sending COMMIT (sql.ErrTxDone), PostgreSQL answered with an error (pgx's
// *pgconn.PgError has SQLState), or SQLite refused for a lock it could not
// get (SQLITE_BUSY, SQLITE_LOCKED: the transaction stays open). Anything
// else — a timeout, a closed connection — may have come after the server
// committed.
func commitRefused(d Dialect, err error) bool {
	if errors.Is(err, sql.ErrTxDone) {
		return true
	}
	var pg interface{ SQLState() string }
	if d == Postgres && errors.As(err, &pg) && pg.SQLState() != "" {
		return true
	}
	var lite interface{ Code() int }
	if d == SQLite && errors.As(err, &lite) {
		switch lite.Code() & 0xff {
		case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
			return true
		}
	}
	return false
}

// stillFenced reports, before the commit, whether conn is still in the
// transaction the check opened. It returns an error wrapping
// ErrOutsideFence if it is not (fn committed or rolled back), an error
// saying the transaction failed (PostgreSQL: a statement failed and fn
// went on; COMMIT would roll back), or nil. It asks each engine in its
// own way:
//
//   - PostgreSQL through pgx: pgconn's transaction status, known from the
//     server's last ReadyForQuery (no round trip); through another driver,
//     txid_current_if_assigned(), which the check's UPDATE assigned.
//   - MySQL/MariaDB: @@in_transaction (MySQL without it: InnoDB's
//     transaction list for this connection).
//   - SQLite: BEGIN, which fails inside a transaction; if it succeeds, the
//     one it began is rolled back with the rest.
//
// A transaction that fn ended and then began anew (COMMIT; BEGIN) is not
// told apart from the fence's own; 'coordctl sql' refuses such statements
// before running them (Dialect.TransactionControl).
func (f *Fence) stillFenced(ctx context.Context, conn *sql.Conn, tx *sql.Tx) error {
	outside := fmt.Errorf("%w: the transaction the check opened was committed or rolled back inside fn", ErrOutsideFence)
	switch f.dialect {
	case Postgres:
		var status byte
		var known bool
		if err := conn.Raw(func(dc any) error { status, known = pgxTxStatus(dc); return nil }); err != nil {
			return fmt.Errorf("sqlfence: transaction status: %w", err)
		}
		if known {
			switch status {
			case 'T':
				return nil
			case 'E':
				return errors.New("rolled back: a statement in the transaction failed (and fn went on); COMMIT would roll back")
			}
			return outside
		}
		var assigned bool
		if err := tx.QueryRowContext(ctx, "SELECT txid_current_if_assigned() IS NOT NULL").Scan(&assigned); err != nil {
			return fmt.Errorf("sqlfence: transaction status: %w", err)
		}
		if !assigned {
			return outside
		}
		return nil
	case MySQL:
		var in int
		err := tx.QueryRowContext(ctx, "SELECT @@in_transaction").Scan(&in)
		if err != nil {
			err = tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.innodb_trx WHERE trx_mysql_thread_id = CONNECTION_ID()").Scan(&in)
		}
		if err != nil {
			return fmt.Errorf("sqlfence: transaction status: %w", err)
		}
		if in == 0 {
			return outside
		}
		return nil
	case SQLite:
		_, err := tx.ExecContext(ctx, "BEGIN")
		switch {
		case err == nil:
			return outside
		case strings.Contains(err.Error(), "within a transaction"):
			return nil
		}
		return fmt.Errorf("sqlfence: transaction status: %w", err)
	}
	return nil
}

// mysqlDeadlock reports whether err is go-sql-driver/mysql's error 1213
// (ER_LOCK_DEADLOCK), after which InnoDB has rolled the whole transaction
// back: not in a transaction any more, yet nothing ran outside the fence.
// The driver's *MySQLError is read by its exported Number field, without
// importing the driver.
func mysqlDeadlock(err error) bool {
	for _, e := range allErrors(err) {
		v := reflect.ValueOf(e)
		if v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			continue
		}
		if n := v.FieldByName("Number"); n.IsValid() && n.CanUint() && n.Uint() == 1213 {
			return true
		}
	}
	return false
}

// allErrors is err and every error it wraps, depth first.
func allErrors(err error) []error {
	if err == nil {
		return nil
	}
	out := []error{err}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		out = append(out, allErrors(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, allErrors(e)...)
		}
	}
	return out
}

// pgxTxStatus returns pgconn's transaction status ('I' idle, 'T' in a
// transaction, 'E' in a failed one) of a github.com/jackc/pgx/v5/stdlib
// connection — dc.Conn().PgConn().TxStatus() — without importing pgx; ok
// is false for another driver.
func pgxTxStatus(dc any) (status byte, ok bool) {
	call := func(m reflect.Value) (reflect.Value, bool) {
		if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 {
			return reflect.Value{}, false
		}
		out := m.Call(nil)[0]
		return out, out.IsValid() && (out.Kind() != reflect.Pointer || !out.IsNil())
	}
	c, ok := call(reflect.ValueOf(dc).MethodByName("Conn"))
	if !ok {
		return 0, false
	}
	pc, ok := call(c.MethodByName("PgConn"))
	if !ok {
		return 0, false
	}
	st, ok := call(pc.MethodByName("TxStatus"))
	if !ok || st.Kind() != reflect.Uint8 {
		return 0, false
	}
	return byte(st.Uint()), true
}

// SQLiteDSN returns a modernc.org/sqlite data source name (driver "sqlite")
// for the database file at path, with the settings Do needs: transactions
// begin IMMEDIATE (_txlock=immediate), so each takes SQLite's write lock
// at BEGIN instead of failing with SQLITE_BUSY when it upgrades a read to a
// write, and a busy timeout of 10 s (_pragma=busy_timeout(10000)), so a
// writer waits for the lock instead of failing at once.
func SQLiteDSN(path string) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + esc + "?_txlock=immediate&_pragma=busy_timeout(10000)"
}
