package sqlfence

import "errors"

// Errors of the sqlfence package. Match them with errors.Is. Bad scopes and
// tokens give errors wrapping fencing.ErrInvalidScope and
// fencing.ErrInvalidToken, a stale token a *fencing.StaleError (matching
// fencing.ErrStale).
var (
	// ErrNilDB is returned by New for a nil *sql.DB.
	ErrNilDB = errors.New("sqlfence: nil database")
	// ErrUnknownDialect is returned by New and ParseDialect for a dialect
	// other than Postgres, MySQL and SQLite.
	ErrUnknownDialect = errors.New("sqlfence: unknown dialect")
	// ErrInvalidTable is returned by New for a table name that is not a
	// plain SQL identifier (optionally schema-qualified).
	ErrInvalidTable = errors.New("sqlfence: invalid table name")
	// ErrReadOnly is returned by New for WithTxOptions with ReadOnly set.
	ErrReadOnly = errors.New("sqlfence: read-only transactions cannot be fenced")
	// ErrUnsettled is returned when the check kept matching no row although
	// the row read right after it admitted the token (the row was being
	// created or changed concurrently, several times in a row). Nothing was
	// written; try again.
	ErrUnsettled = errors.New("sqlfence: fence row changed during the check")
	// ErrBadTable is returned when the check updated more than one row: the
	// fence table exists without a primary key on scope. Nothing was written.
	ErrBadTable = errors.New("sqlfence: fence table has no primary key on scope")
	// ErrUnsafeDSN is returned by NormalizeDSN for a SQLite data source
	// name under which the check is not safe: deferred transactions, or an
	// in-memory database.
	ErrUnsafeDSN = errors.New("sqlfence: unsafe data source name")
	// ErrCommitUnknown is returned by Do and Fence when the COMMIT was
	// sent and no answer came back (a lost connection, a timeout): the
	// transaction, with the check's raise of the floor and fn's writes, may
	// or may not have committed. Read before retrying: a retry of a
	// non-idempotent write (SET n = n + 1) may apply it twice.
	ErrCommitUnknown = errors.New("sqlfence: commit outcome unknown")
	// ErrOutsideFence is returned by Do when, at fn's end, the transaction
	// the check opened was no longer open: fn committed or rolled it back
	// (COMMIT, ROLLBACK, or on MySQL a statement that commits implicitly,
	// such as DDL), so statements after that ran outside the fence, and
	// may have been committed without it.
	ErrOutsideFence = errors.New("sqlfence: statements ran outside the fenced transaction")
	// ErrInvalidDSN is returned by NormalizeDSN for a PostgreSQL or MySQL
	// data source name that does not parse as its driver parses it. Its
	// text does not show the DSN.
	ErrInvalidDSN = errors.New("sqlfence: data source name cannot be parsed")
	// ErrNotTransactional is returned (wrapped, with the table and its
	// engine named) by every call that uses the fence table when, on
	// MySQL/MariaDB, the table is not an InnoDB table: MyISAM, Aria,
	// MEMORY and the like neither keep a row locked until COMMIT nor roll
	// back, so a check in them holds no stale writer back (and a "rolled
	// back" transaction may have left its writes). Nothing was written.
	// The engine is read from information_schema.TABLES once per Fence,
	// right after CREATE TABLE IF NOT EXISTS.
	ErrNotTransactional = errors.New("sqlfence: fence table is not transactional")
	// ErrFenceMoved is returned by Do and DoConn (WithRecheck) when, just before
	// COMMIT, the scope's row no longer holds the token the check
	// admitted: one of fn's statements rewrote or deleted the fence row
	// (UPDATE coordkit_fence SET token = 1 ...). The transaction was
	// rolled back: nothing was committed in transactional tables, and the
	// floor is what it was before.
	ErrFenceMoved = errors.New("sqlfence: a statement in the fenced transaction moved the fence row")
)
