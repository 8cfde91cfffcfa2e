package sqlfence

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coordkit/coordkit/fencing"
)

// DefaultTable is the fence table's name unless WithTable says otherwise.
const DefaultTable = "coordkit_fence"

// maxScopeBytes is the scope column's size; longer scopes are refused
// before any statement runs.
const maxScopeBytes = fencing.MaxScopeLen

// maxAttempts bounds the check's retries (a missing row, then a row that
// changed between the check and the read of the floor).
const maxAttempts = 5

// Fence checks fencing tokens in a SQL database, in the caller's own
// transaction. It is safe for concurrent use; several Fences (in one or
// many processes) may share a table.
type Fence struct {
	db      *sql.DB
	dialect Dialect
	table   string
	txOpts  *sql.TxOptions
	st      statements

	// marker: a savepoint set after the check and released before COMMIT
	// (WithSavepointCheck).
	marker bool
	// recheck: the fence row read again before COMMIT (WithRecheck).
	recheck bool

	mu sync.Mutex
	// created: the table exists and its engine was checked (set under mu,
	// read without it on every transaction).
	created atomic.Bool
	// probe reads the driver connection's transaction status.
	probe statusProbe
	// multi is, for MySQL's DoConn, whether the connection takes several
	// statements in one query (multiStatements=true): 0 not known yet, 1
	// yes, -1 no.
	multi atomic.Int32

	// floors are the floors this Fence last saw committed, per scope: a
	// hint of which check to try first (hintedShared), never a decision.
	floorsMu sync.RWMutex
	floors   map[string]fencing.Token
}

// maxHints bounds Fence.floors; past it the hints start again empty.
const maxHints = 4096

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

// WithSavepointCheck makes Do and DoConn set a savepoint (named
// MarkerSavepoint) right after the check and release it before COMMIT, at
// two round trips more per transaction. Without it, Do's check before
// COMMIT sees only whether the connection is in a transaction: one that fn
// ended and began anew (COMMIT; BEGIN, or on MySQL a stored procedure
// that commits and starts a transaction) passes for the fence's own,
// although the statements after the COMMIT ran without the fence row's
// lock. With it, the savepoint, which ends with the transaction it was set
// in, is gone then, and Do returns ErrOutsideFence. 'coordctl sql' uses
// it. fn must not release or roll back past MarkerSavepoint.
func WithSavepointCheck() Option { return func(f *Fence) { f.marker = true } }

// WithRecheck makes Do and DoConn read the scope's fence row again just
// before COMMIT, in the same transaction, and roll back with ErrFenceMoved
// if it no longer holds the admitted token: a statement of fn moved it
// (UPDATE coordkit_fence SET token = 1 …, directly or through a view, a
// trigger, a procedure). The check's lock keeps every other transaction
// off the row, so what it reads is what the COMMIT would leave. Without
// it, a fn that writes the fence table can commit a floor other than the
// token Do admitted (lowered: a stale holder's next write is admitted).
// Do pays one round trip for it; DoConn sends it with the COMMIT
// (PostgreSQL; MySQL with multiStatements=true), where it costs the
// statement but no round trip. 'coordctl sql', which runs statements it
// did not write, uses it.
func WithRecheck() Option { return func(f *Fence) { f.recheck = true } }

// MarkerSavepoint is the savepoint WithSavepointCheck sets.
const MarkerSavepoint = "coordkit_fence_check"

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
	if f.created.Load() {
		return nil // every transaction after the first: no lock to share
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.created.Load() {
		return nil
	}
	if _, err := f.db.ExecContext(ctx, f.st.create); err != nil {
		// Two sessions creating the table at once can make PostgreSQL fail
		// one of them on its catalog's unique index; the table is there.
		if _, perr := f.db.ExecContext(ctx, f.st.probe); perr != nil {
			return fmt.Errorf("sqlfence: create table %s: %w", f.table, err)
		}
	}
	if err := f.checkEngine(ctx); err != nil {
		return err
	}
	f.created.Store(true)
	return nil
}

// checkEngine refuses, on MySQL/MariaDB, a fence table that is not InnoDB
// (ErrNotTransactional): CREATE TABLE IF NOT EXISTS names InnoDB, but a
// table created beforehand keeps whatever engine it was made with.
func (f *Fence) checkEngine(ctx context.Context) error {
	if f.dialect != MySQL {
		return nil
	}
	var schema any // nil: the connection's database
	name := f.table
	if i := strings.IndexByte(name, '.'); i >= 0 {
		schema, name = name[:i], name[i+1:]
	}
	var engine sql.NullString
	err := f.db.QueryRowContext(ctx, f.st.engine, schema, name).Scan(&engine)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: %s is not in information_schema.TABLES, so its engine cannot be checked", ErrNotTransactional, f.table)
	case err != nil:
		return fmt.Errorf("sqlfence: read the engine of %s: %w", f.table, err)
	case !engine.Valid:
		return fmt.Errorf("%w: %s has no engine (a view?); the fence needs an InnoDB table", ErrNotTransactional, f.table)
	case !strings.EqualFold(engine.String, "InnoDB"):
		return fmt.Errorf("%w: %s uses engine %s, which neither keeps the scope's row locked until COMMIT nor rolls back, so its check holds no stale writer back; the fence needs InnoDB (ALTER TABLE %s ENGINE=InnoDB)",
			ErrNotTransactional, f.table, engine.String, f.table)
	}
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
// floor to token if token is not below it (or, when token equals the
// floor, only locks the row for sharing), and holds the scope's row lock
// until the transaction ends, so fn's writes commit only if no higher token
// was admitted in between. With WithRecheck it reads the row again before
// COMMIT: if fn moved it, Do rolls back and returns an error wrapping
// ErrFenceMoved. A MySQL fence table that is not InnoDB gives ErrNotTransactional before
// anything runs.
//
// Do returns a *fencing.StaleError (matching fencing.ErrStale, Floor read in
// the same transaction) if token is below the floor: nothing is written and
// fn is not called. If fn returns an error or panics, the transaction is
// rolled back (the floor does not move) and the error is returned wrapped.
// Bad arguments give errors wrapping fencing.ErrInvalidToken or
// fencing.ErrInvalidScope before any I/O. Other errors come from the
// database. When COMMIT was sent and no answer came back, Do returns an
// error wrapping ErrCommitUnknown: the writes and the floor may or may not
// be committed. Every other error means the transaction was rolled back
// (nothing was committed in transactional tables), except ErrOutsideFence.
//
// fn must use tx for the writes that need fencing, and must not commit or
// roll it back: if at fn's end the connection is no longer in the
// transaction the check opened (fn ran COMMIT or ROLLBACK, or on MySQL a
// statement that commits implicitly), Do returns an error wrapping
// ErrOutsideFence (and fn's own error, if any): statements after that
// point ran outside the fence and may have been committed without it.
func (f *Fence) Do(ctx context.Context, scope string, token fencing.Token, fn func(tx *sql.Tx) error) error {
	return f.run(ctx, scope, token, false, false, func(q Querier) error { return fn(q.(*sql.Tx)) })
}

// Querier is what DoConn's fn gets to run its statements: the methods a
// *sql.Tx and a *sql.Conn share.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ Querier = (*sql.Tx)(nil)
	_ Querier = (*sql.Conn)(nil)
)

// DoConn is Do with the transaction begun in SQL on a connection of its
// own instead of through database/sql's BeginTx, so that BEGIN and the
// check go to the server together: one round trip where Do needs two.
// On PostgreSQL "BEGIN; UPDATE …" is one simple-protocol query (pgx, and
// lib/pq, send a query without arguments that way); on MySQL/MariaDB the
// same when the DSN has multiStatements=true (otherwise START TRANSACTION
// is its own round trip, as in Do); SQLite has no round trips to save. The
// check is the same single statement, with token and scope written into
// it (Dialect.checkLiteral), and the guarantee is Do's.
//
// fn runs its statements on q, the connection, inside that transaction;
// it must not begin, commit or roll back (Do's check before COMMIT applies,
// ErrOutsideFence). The isolation level of WithTxOptions is sent in the
// BEGIN. Errors as Do's; on MySQL the COMMIT follows ctx here (it does not
// through database/sql's Tx).
func (f *Fence) DoConn(ctx context.Context, scope string, token fencing.Token, fn func(q Querier) error) error {
	return f.run(ctx, scope, token, true, false, fn)
}

// run runs the fenced transaction, again while the check says so. The
// first try is the shared check when raise is false and the hint allows
// it; every later try, and a raise (Fence), is the exclusive one, which
// locks the row for writing from its first statement: no transaction of
// this package ever upgrades a shared lock on the fence row.
func (f *Fence) run(ctx context.Context, scope string, token fencing.Token, onConn, raise bool, fn func(Querier) error) error {
	if err := checkArgs(scope, token); err != nil {
		return err
	}
	if err := f.ensureTable(ctx); err != nil {
		return err
	}
	shared := !raise && f.hintedShared(scope, token)
	for attempt := 1; ; attempt++ {
		done, err := f.attempt(ctx, scope, token, onConn, shared, fn)
		if done || err != nil {
			return err
		}
		shared = false
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
	return f.run(ctx, scope, token, false, true, func(Querier) error { return nil })
}

// hintedShared reports whether to try the shared check first: unless this
// Fence last saw the scope's floor below token (a raise: the exclusive
// check directly). With no hint, the shared check goes first, since a
// holder writes many times under one token and raises once.
func (f *Fence) hintedShared(scope string, token fencing.Token) bool {
	f.floorsMu.RLock()
	defer f.floorsMu.RUnlock()
	floor, ok := f.floors[scope]
	return !ok || floor >= token
}

// hint records the floor of scope as last seen committed (or refusing).
// Most transactions see the floor the hint already holds: they only read.
func (f *Fence) hint(scope string, floor fencing.Token) {
	f.floorsMu.RLock()
	old, ok := f.floors[scope]
	f.floorsMu.RUnlock()
	if ok && old == floor {
		return
	}
	f.floorsMu.Lock()
	defer f.floorsMu.Unlock()
	if f.floors == nil || len(f.floors) >= maxHints {
		f.floors = map[string]fencing.Token{}
	}
	f.floors[scope] = floor
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
// check opened (stillFenced). With onConn the transaction is begun and
// ended in SQL on that connection (DoConn), else through a *sql.Tx (Do).
// With shared the check is the shared one: it admits only a token equal
// to the floor, and anything else (a raise, a missing row) is tried again
// with the exclusive check in a new transaction.
func (f *Fence) attempt(ctx context.Context, scope string, token fencing.Token, onConn, shared bool, fn func(Querier) error) (done bool, err error) {
	conn, err := f.db.Conn(ctx)
	if err != nil {
		return true, fmt.Errorf("sqlfence: connect: %w", err)
	}
	defer conn.Close()
	var t txn
	if onConn {
		t = &connTxn{conn: conn}
	} else {
		t = &sqlTxn{conn: conn}
	}
	rows, err := t.begin(ctx, f, f.check(scope, token, shared))
	finished := false
	defer func() {
		if !finished {
			t.rollback(ctx)
		}
	}()
	if err != nil {
		if deadlocked(f.dialect, err) {
			return false, nil // chosen as a deadlock's victim at the check: nothing ran yet
		}
		return true, fmt.Errorf("sqlfence: check scope %q token %d: %w", scope, token, err)
	}
	q := t.querier()
	var floor fencing.Token
	var exists bool
	if rows == 0 {
		if floor, exists, err = readFloor(ctx, q, f.st.floor, scope); err != nil {
			return true, err
		}
	}
	switch decide(rows, exists, floor, token) {
	case admitted:
	case stale:
		f.hint(scope, floor)
		return true, &fencing.StaleError{Scope: scope, Token: token, Floor: floor}
	case missing:
		// The row is created outside the transaction, which is rolled
		// back first: a concurrent creator's duplicate is harmless, and
		// the row, once there, stays. On the same connection: a pool of
		// one (SetMaxOpenConns(1)) has no other.
		finished = true
		t.rollback(ctx)
		if _, err := conn.ExecContext(ctx, f.st.insert, scope); err != nil {
			return true, fmt.Errorf("sqlfence: create row of scope %q: %w", scope, err)
		}
		return false, nil
	case again:
		return false, nil
	default:
		return true, fmt.Errorf("%w: check of scope %q affected %d rows", ErrBadTable, scope, rows)
	}
	if f.marker {
		if _, err := q.ExecContext(ctx, "SAVEPOINT "+MarkerSavepoint); err != nil {
			return true, fmt.Errorf("sqlfence: scope %q token %d: savepoint after the check: %w", scope, token, err)
		}
	}
	if err := fn(q); err != nil {
		if ferr := f.stillFenced(ctx, conn, q, false); errors.Is(ferr, ErrOutsideFence) && !deadlocked(f.dialect, err) {
			return true, fmt.Errorf("sqlfence: scope %q token %d: %w, then fn failed: %w", scope, token, ferr, err)
		}
		return true, fmt.Errorf("sqlfence: scope %q token %d: rolled back: %w", scope, token, err)
	}
	if err := f.stillFenced(ctx, conn, q, true); err != nil {
		return true, fmt.Errorf("sqlfence: scope %q token %d: %w", scope, token, err)
	}
	if ct, ok := t.(*connTxn); ok && f.recheck && f.recheckWithCommit() {
		ct.recheck = f.dialect.recheckRaising(f.table, scope, int64(token))
	} else if f.recheck {
		if err := f.recheckRow(ctx, q, scope, token); err != nil {
			return true, err
		}
	}
	if err := ctx.Err(); err != nil {
		return true, fmt.Errorf("sqlfence: scope %q token %d: rolled back before the commit: %w", scope, token, err)
	}
	finished = true // from here on a Rollback can only fail
	if err := t.commit(ctx); err != nil {
		return true, f.commitErr(ctx, conn, scope, token, err)
	}
	f.hint(scope, token)
	return true, nil
}

// recheckRow reads, just before COMMIT and in the same transaction, whether
// the scope's row still holds the admitted token. The check's lock (shared
// or exclusive) keeps every other transaction from changing the row until
// this one ends, so what it reads is what the commit will leave — unless
// one of fn's own statements rewrote it: then ErrFenceMoved, and the
// caller rolls back. One round trip.
func (f *Fence) recheckRow(ctx context.Context, q Querier, scope string, token fencing.Token) error {
	var n int64
	var err error
	if f.dialect == MySQL {
		err = q.QueryRowContext(ctx, f.dialect.recheckLiteral(f.table, scope, int64(token))).Scan(&n)
	} else {
		err = q.QueryRowContext(ctx, f.st.recheck, scope, int64(token)).Scan(&n)
	}
	switch {
	case err != nil:
		return fmt.Errorf("sqlfence: scope %q token %d: re-check of the fence row before COMMIT: rolled back: %w", scope, token, err)
	case n == 1:
		return nil
	}
	now := "no row"
	if floor, exists, err := readFloor(ctx, q, f.st.floor, scope); err == nil && exists {
		now = fmt.Sprintf("token %d", floor)
	}
	return fmt.Errorf("%w: scope %q token %d: before COMMIT the row held %s; rolled back, so the floor stays as it was and nothing was committed in transactional tables",
		ErrFenceMoved, scope, token, now)
}

// recheckWithCommit reports whether DoConn can send the re-check with
// COMMIT in one message: on PostgreSQL (the simple protocol), and on MySQL
// when the connection takes several statements in one query.
func (f *Fence) recheckWithCommit() bool {
	return f.dialect == Postgres || f.dialect == MySQL && f.multi.Load() == 1
}

// movedAtCommit reports whether err, returned for DoConn's "re-check;
// COMMIT", is the re-check's failure (recheckRaising): then the COMMIT did
// not run.
func movedAtCommit(d Dialect, err error) bool {
	return engineError(d, err, "22P02", 1242) && (d != Postgres || strings.Contains(err.Error(), movedMarker))
}

// checkSQL is one check to run: its text and arguments, and whether its
// answer is a count to read (a SELECT COUNT(*)) rather than rows affected.
type checkSQL struct {
	shared  bool
	scope   string
	token   fencing.Token
	query   string
	args    []any
	counted bool
}

// check is the check of token in scope: the exclusive one (the UPDATE) or,
// with shared, the shared one. MySQL's are literals (go-sql-driver would
// prepare a statement with arguments: a round trip more).
func (f *Fence) check(scope string, token fencing.Token, shared bool) checkSQL {
	c := checkSQL{shared: shared, scope: scope, token: token}
	switch {
	case f.dialect == MySQL && shared:
		c.query, c.counted = f.dialect.shareLiteral(f.table, scope, int64(token)), true
	case f.dialect == MySQL:
		c.query = f.dialect.checkLiteral(f.table, scope, int64(token))
	case shared:
		c.query, c.args, c.counted = f.st.share, []any{scope, int64(token)}, f.dialect != Postgres
	default:
		c.query, c.args = f.st.check, []any{int64(token), scope, int64(token)}
	}
	return c
}

// run runs the check on q and returns its count or rows affected.
func (c checkSQL) run(ctx context.Context, q Querier, query string) (int64, error) {
	if c.counted {
		var n int64
		err := q.QueryRowContext(ctx, query, c.args...).Scan(&n)
		return n, err
	}
	res, err := q.ExecContext(ctx, query, c.args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// deadlocked reports whether err is the engine's deadlock error
// (PostgreSQL 40P01, MySQL 1213), after which the whole transaction is
// rolled back.
func deadlocked(d Dialect, err error) bool { return engineError(d, err, "40P01", 1213) }

// engineError reports whether err is, on PostgreSQL, an error of SQLSTATE
// pgState, or on MySQL one of number mysqlNumber.
func engineError(d Dialect, err error, pgState string, mysqlNumber uint64) bool {
	var pg interface{ SQLState() string }
	switch d {
	case Postgres:
		return errors.As(err, &pg) && pg.SQLState() == pgState
	case MySQL:
		return mysqlErrNumber(err) == mysqlNumber
	}
	return false
}

// txn is one fenced transaction on a connection: begun with the check,
// then committed or rolled back.
type txn interface {
	// begin starts the transaction and runs the check in it, returning
	// the check's rows affected (or count).
	begin(ctx context.Context, f *Fence, c checkSQL) (int64, error)
	querier() Querier
	commit(ctx context.Context) error
	rollback(ctx context.Context)
}

// sqlTxn is database/sql's transaction (Do): BeginTx, then the check.
type sqlTxn struct {
	conn *sql.Conn
	tx   *sql.Tx
}

func (t *sqlTxn) begin(ctx context.Context, f *Fence, c checkSQL) (int64, error) {
	for prepared := false; ; prepared = true {
		tx, err := t.conn.BeginTx(ctx, f.txOpts)
		if err != nil {
			return 0, fmt.Errorf("begin: %w", err)
		}
		t.tx = tx
		if f.dialect != Postgres {
			return c.run(ctx, tx, c.query)
		}
		n, err := checkSQL{}.run(ctx, tx, f.pgCheck(c))
		if err == nil || prepared || !notPrepared(err) {
			return n, err
		}
		// The transaction is aborted; prepare outside it and begin again.
		_ = tx.Rollback()
		t.tx = nil
		if err := f.pgPrepare(ctx, t.conn); err != nil {
			return 0, err
		}
	}
}

func (t *sqlTxn) querier() Querier             { return t.tx }
func (t *sqlTxn) commit(context.Context) error { return t.tx.Commit() }
func (t *sqlTxn) rollback(context.Context) {
	if t.tx != nil {
		_ = t.tx.Rollback() // the error, if any, is not the one to report
	}
}

// pgCheck is the check as PostgreSQL runs it in Do and DoConn: an EXECUTE
// of the statement pgPrepares prepared on the connection (with shared, the
// shared check), token and scope written into the text. A query without
// arguments goes in the simple protocol (pgx, lib/pq), so DoConn sends it
// in one message with BEGIN, and Do saves the client the extended
// protocol's binding of arguments; the server plans it once per connection
// instead of once per transaction.
func (f *Fence) pgCheck(c checkSQL) string {
	return fmt.Sprintf("EXECUTE %s(%d, %s)", pgPrepared(f.table, c.shared), c.token, f.dialect.scopeLiteral(c.scope))
}

// notPrepared reports whether err is PostgreSQL's invalid_sql_statement_name
// (26000): pgCheck's statement is not prepared on this connection yet.
func notPrepared(err error) bool { return engineError(Postgres, err, "26000", 0) }

// pgPrepare runs pgPrepares on conn, outside any transaction (a prepared
// statement outlives it). 42P05, prepared already, is fine: a pooler's
// other session.
func (f *Fence) pgPrepare(ctx context.Context, conn *sql.Conn) error {
	for _, prepare := range pgPrepares(f.table) {
		if _, err := conn.ExecContext(ctx, prepare); err != nil && !engineError(Postgres, err, "42P05", 0) {
			return fmt.Errorf("prepare the check: %w", err)
		}
	}
	return nil
}

// connTxn is a transaction begun and ended in SQL on a connection
// (DoConn), BEGIN sent with the check.
type connTxn struct {
	conn  *sql.Conn
	begun bool
	// recheck, when set, is sent with COMMIT, before it (recheckRaising).
	recheck string
}

func (t *connTxn) begin(ctx context.Context, f *Fence, c checkSQL) (int64, error) {
	begin, err := f.beginSQL()
	if err != nil {
		return 0, err
	}
	t.begun = true // from here on, end it whatever happens
	switch {
	case f.dialect == Postgres:
		exec := begin + "; " + f.pgCheck(c)
		n, err := checkSQL{}.run(ctx, t.conn, exec)
		if err != nil && notPrepared(err) {
			// The BEGIN ran and the transaction is aborted. Once per connection.
			if _, err = t.conn.ExecContext(ctx, "ROLLBACK"); err != nil {
				return 0, err
			}
			if err = f.pgPrepare(ctx, t.conn); err != nil {
				return 0, err
			}
			n, err = checkSQL{}.run(ctx, t.conn, exec)
		}
		return n, err
	case f.dialect == MySQL && f.multi.Load() >= 0:
		n, err := c.run(ctx, t.conn, begin+"; "+c.query)
		if err != nil && mysqlErrNumber(err) == 1064 {
			// No multiStatements in the DSN: the server read it as one
			// statement and ran nothing. Two round trips from now on.
			f.multi.Store(-1)
			return t.begin(ctx, f, c)
		}
		if err == nil {
			f.multi.Store(1)
		}
		return n, err
	}
	for _, stmt := range strings.Split(begin, "; ") {
		if _, err = t.conn.ExecContext(ctx, stmt); err != nil {
			return 0, err
		}
	}
	return c.run(ctx, t.conn, c.query)
}

func (t *connTxn) querier() Querier { return t.conn }

func (t *connTxn) commit(ctx context.Context) error {
	t.begun = false
	commit := "COMMIT"
	if t.recheck != "" {
		commit = t.recheck + "; COMMIT"
	}
	_, err := t.conn.ExecContext(ctx, commit)
	if err != nil {
		// Whatever the connection's state, it does not go back to the pool.
		_ = t.conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	return err
}

// rollback ends the transaction; if it cannot (the context is over, the
// connection broken), the connection is closed instead of going back to
// the pool inside a transaction, and the server rolls back.
func (t *connTxn) rollback(ctx context.Context) {
	if !t.begun {
		return
	}
	t.begun = false
	if ctx.Err() == nil {
		if _, err := t.conn.ExecContext(ctx, "ROLLBACK"); err == nil {
			return
		}
	}
	_ = t.conn.Raw(func(any) error { return driver.ErrBadConn })
}

// beginSQL is the statement that begins DoConn's transaction, with the
// isolation level of WithTxOptions.
func (f *Fence) beginSQL() (string, error) {
	var level string
	if f.txOpts != nil {
		switch f.txOpts.Isolation {
		case sql.LevelDefault:
		case sql.LevelReadUncommitted:
			level = "READ UNCOMMITTED"
		case sql.LevelReadCommitted:
			level = "READ COMMITTED"
		case sql.LevelRepeatableRead:
			level = "REPEATABLE READ"
		case sql.LevelSerializable:
			level = "SERIALIZABLE"
		default:
			return "", fmt.Errorf("sqlfence: isolation level %v: not supported by DoConn", f.txOpts.Isolation)
		}
	}
	switch f.dialect {
	case SQLite:
		return "BEGIN IMMEDIATE", nil // SQLite's only level is SERIALIZABLE
	case MySQL:
		if level != "" {
			return "SET TRANSACTION ISOLATION LEVEL " + level + "; START TRANSACTION", nil
		}
		return "START TRANSACTION", nil
	}
	if level != "" {
		return "BEGIN ISOLATION LEVEL " + level, nil
	}
	return "BEGIN", nil
}

// commitErr explains an error of COMMIT: not committed when the database
// answered with an error (or database/sql had ended the transaction before
// sending COMMIT), ErrCommitUnknown when no answer came.
func (f *Fence) commitErr(ctx context.Context, conn *sql.Conn, scope string, token fencing.Token, err error) error {
	if movedAtCommit(f.dialect, err) {
		return fmt.Errorf("%w: scope %q token %d: before COMMIT the row no longer held the token; rolled back, so the floor stays as it was and nothing was committed in transactional tables: %w",
			ErrFenceMoved, scope, token, err)
	}
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
// sending COMMIT (sql.ErrTxDone), PostgreSQL answered with an error of
// severity ERROR (pgx's *pgconn.PgError has SQLState; a FATAL or PANIC —
// the server shutting down, the backend dying — ends the session, and it
// can come after the commit was made durable), or SQLite refused for a
// lock it could not get (SQLITE_BUSY, SQLITE_LOCKED: the transaction stays
// open). Anything else — a timeout, a closed connection — may have come
// after the server committed.
func commitRefused(d Dialect, err error) bool {
	if errors.Is(err, sql.ErrTxDone) {
		return true
	}
	var pg interface{ SQLState() string }
	if d == Postgres && errors.As(err, &pg) && pg.SQLState() != "" {
		sev := pgSeverity(pg)
		return sev == "" || sev == "ERROR"
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
//   - MySQL/MariaDB through go-sql-driver: the server's in-transaction
//     flag of the last OK packet, which the driver keeps (no round trip;
//     mysqlInTransaction); through another driver @@in_transaction (MySQL
//     without it: InnoDB's transaction list for this connection).
//   - SQLite: BEGIN, which fails inside a transaction; if it succeeds, the
//     one it began is rolled back with the rest.
//
// A transaction that fn ended and then began anew (COMMIT; BEGIN) is not
// told apart from the fence's own, unless WithSavepointCheck set its
// savepoint after the check: then it must still be there (released when
// the commit follows, rolled back to when fn failed, which a failed
// PostgreSQL transaction allows).
func (f *Fence) stillFenced(ctx context.Context, conn *sql.Conn, tx Querier, commit bool) error {
	err := f.inTransaction(ctx, conn, tx)
	if !f.marker || err != nil && !(errors.Is(err, errFailedTx) && !commit) {
		return err
	}
	if failed := err; failed != nil {
		// fn failed in a failed transaction: ROLLBACK TO still tells
		// whether it is the one the check opened.
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+MarkerSavepoint); err != nil && noSuchSavepoint(f.dialect, err) {
			return errSavepointGone
		}
		return failed
	}
	end := "ROLLBACK TO SAVEPOINT "
	if commit {
		end = "RELEASE SAVEPOINT "
	}
	_, err = tx.ExecContext(ctx, end+MarkerSavepoint)
	switch {
	case err == nil:
		return nil
	case noSuchSavepoint(f.dialect, err):
		return errSavepointGone
	}
	return fmt.Errorf("sqlfence: transaction status: %w", err)
}

// errSavepointGone: WithSavepointCheck's savepoint is not there at the end
// of fn, so the transaction is not the one the check opened.
var errSavepointGone = fmt.Errorf("%w: the savepoint set after the check is gone: the transaction the check opened was ended inside fn, and another begun", ErrOutsideFence)

// errOutside: the transaction the check opened is over at fn's end.
var errOutside = fmt.Errorf("%w: the transaction the check opened was committed or rolled back inside fn", ErrOutsideFence)

// errFailedTx: PostgreSQL's transaction is in the failed state.
var errFailedTx = errors.New("rolled back: a statement in the transaction failed (and fn went on); COMMIT would roll back")

// noSuchSavepoint reports whether err says the savepoint does not exist:
// PostgreSQL's 3B001, MySQL's 1305, SQLite's "no such savepoint".
func noSuchSavepoint(d Dialect, err error) bool {
	if d == SQLite {
		return strings.Contains(err.Error(), "no such savepoint")
	}
	return engineError(d, err, "3B001", 1305)
}

// inTransaction is stillFenced's first question: is conn in a
// transaction at all (and, on PostgreSQL, not a failed one)?
func (f *Fence) inTransaction(ctx context.Context, conn *sql.Conn, tx Querier) error {
	switch f.dialect {
	case Postgres:
		var status byte
		var known bool
		if err := conn.Raw(func(dc any) error { status, known = f.probe.pgxTxStatus(dc); return nil }); err != nil {
			return fmt.Errorf("sqlfence: transaction status: %w", err)
		}
		if known {
			switch status {
			case 'T':
				return nil
			case 'E':
				return errFailedTx
			}
			return errOutside
		}
		var assigned bool
		if err := tx.QueryRowContext(ctx, "SELECT txid_current_if_assigned() IS NOT NULL").Scan(&assigned); err != nil {
			return fmt.Errorf("sqlfence: transaction status: %w", err)
		}
		if !assigned {
			return errOutside
		}
		return nil
	case MySQL:
		var in int
		var known bool
		if err := conn.Raw(func(dc any) error { in, known = f.probe.mysqlInTransaction(dc); return nil }); err != nil {
			return fmt.Errorf("sqlfence: transaction status: %w", err)
		}
		if known {
			if in == 0 {
				return errOutside
			}
			return nil
		}
		err := tx.QueryRowContext(ctx, "SELECT @@in_transaction").Scan(&in)
		if err != nil {
			err = tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.innodb_trx WHERE trx_mysql_thread_id = CONNECTION_ID()").Scan(&in)
		}
		if err != nil {
			return fmt.Errorf("sqlfence: transaction status: %w", err)
		}
		if in == 0 {
			return errOutside
		}
		return nil
	case SQLite:
		_, err := tx.ExecContext(ctx, "BEGIN")
		switch {
		case err == nil:
			return errOutside
		case strings.Contains(err.Error(), "within a transaction"):
			return nil
		}
		return fmt.Errorf("sqlfence: transaction status: %w", err)
	}
	return nil
}

// mysqlErrNumber returns the number of go-sql-driver/mysql's *MySQLError
// in err's chain (1213 ER_LOCK_DEADLOCK, after which InnoDB has rolled the
// whole transaction back; 1064 a syntax error), 0 if there is none. It
// reads the error's exported Number field, without importing the driver.
func mysqlErrNumber(err error) uint64 {
	for _, e := range allErrors(err) {
		v := reflect.ValueOf(e)
		if v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct || v.Type().Name() != "MySQLError" {
			continue
		}
		if n := v.FieldByName("Number"); n.IsValid() && n.CanUint() {
			return n.Uint()
		}
	}
	return 0
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

// pgSeverity returns the severity of a PostgreSQL error — the
// SeverityUnlocalized or else Severity field of pgx's *pgconn.PgError (lib/pq's
// *pq.Error has Severity) — without importing a driver; "" if it has none.
func pgSeverity(e any) string {
	v := reflect.ValueOf(e)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	for _, name := range []string{"SeverityUnlocalized", "Severity"} {
		if f := v.FieldByName(name); f.IsValid() && f.Kind() == reflect.String && f.String() != "" {
			return f.String()
		}
	}
	return ""
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
