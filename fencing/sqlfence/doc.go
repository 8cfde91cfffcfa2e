// Package sqlfence checks fencing tokens where the data is: in the
// caller's own transaction on PostgreSQL, MySQL/MariaDB (InnoDB) or SQLite,
// through database/sql.
//
//	f, err := sqlfence.New(db, sqlfence.Postgres)
//	err = f.Do(ctx, held.Scope(), held.Token(), func(tx *sql.Tx) error {
//		_, err := tx.ExecContext(ctx, "UPDATE report SET body = $1 WHERE id = 1", body)
//		return err
//	})
//	if errors.Is(err, fencing.ErrStale) { /* a newer holder has written: nothing was committed */ }
//
// One table per database, coordkit_fence by default (WithTable), created on
// first use with CREATE TABLE IF NOT EXISTS (on MySQL/MariaDB ENGINE=InnoDB,
// and a table that exists with another engine — MyISAM, Aria, MEMORY — is
// refused with ErrNotTransactional before anything is written: its rows
// are neither locked until COMMIT nor rolled back): one row per scope with
// its floor (token, the highest token admitted) and writes (how many times
// the exclusive check below wrote the row). The check is one statement,
// the first of the transaction, before the caller's writes. When the floor
// must move (the token is above it) it is the exclusive check:
//
//	UPDATE coordkit_fence SET token = $tok, writes = writes + 1
//	WHERE scope = $scope AND token <= $tok
//
// When the token equals the floor — a holder writing again under the token
// it raised the floor to, which is most transactions — nothing needs to
// change, and the shared check takes the row's lock for reading only:
//
//	SELECT 1 FROM coordkit_fence WHERE scope = $scope AND token = $tok FOR SHARE
//	(MySQL: SELECT COUNT(*) … LOCK IN SHARE MODE; SQLite: a plain SELECT)
//
// A Fence tries the shared check first unless it last saw the scope's floor
// below the token (Fence always raises, exclusively). If the shared check
// finds no row with the token, the transaction is rolled back and the
// exclusive check runs in a new one: a shared lock on the fence row is
// never upgraded, so two holders of one token cannot deadlock on it.
//
// One row: the token is admitted, the floor is now at least the
// token, and fn's writes run in the same transaction and commit with it. No
// row: either the scope has no row yet (Do inserts it at 0 outside the
// transaction, a concurrent insert of the same row being harmless, and
// checks again) or the token is below the floor: the transaction is rolled
// back and Do returns a *fencing.StaleError with the floor read in the same
// transaction. With WithRecheck (which 'coordctl sql' uses), just before
// COMMIT Do reads the row again in the same transaction: it must still
// hold the token. The check's lock keeps every other transaction from
// changing it, so only fn's own statements can have (UPDATE coordkit_fence
// SET token = 1 …, through a view or a trigger too); then Do rolls back and
// returns ErrFenceMoved, so the floor that commits is always the token Do
// admitted. That costs Do one round trip; DoConn sends it with the COMMIT
// (PostgreSQL; MySQL with multiStatements=true), where it costs the
// statement but no round trip.
//
// WithRecheck is off by default in this package, and on in 'coordctl
// sql'. What it catches is fn's own statements writing the fence table:
// in Go, fn is the caller's code, under the same rule as "fn must not end
// the transaction". The rule the package follows is that a check that
// costs neither a round trip nor a statement is always on (whether the
// transaction the check opened is still open: read from the driver's
// connection state), and one that costs a statement per transaction is
// the caller's choice (WithRecheck, WithSavepointCheck); 'coordctl sql',
// which runs statements it did not write, turns both on. The re-check is
// a statement even where it rides in the COMMIT's round trip: on a
// one-UPDATE transaction it costs about what the shared check itself
// costs (docs/fencing.md has the figures), so as a default it would
// double the fence's price for every caller to guard against a mistake
// that only some can make.
//
// DoConn is Do with BEGIN sent to the server together with the check (one
// round trip less; fn gets a Querier on the connection instead of a
// *sql.Tx). Do cannot save that round trip: a *sql.Tx comes only from
// database/sql's BeginTx, which has the driver send BEGIN on its own (pgx
// and go-sql-driver both do, and offer no way in through database/sql to
// send more with it), and its Commit sends COMMIT on its own. Handing fn
// a *sql.Tx of another *sql.DB built around the borrowed connection would
// save it, but would break fn's tx.Stmt of the caller's prepared
// statements; so Do stays one round trip above DoConn, and DoConn is the
// way to a fenced transaction with the unfenced one's round trips. Fence
// runs the check alone, to raise the floor before a new holder's first
// write; Floor reads the floor. The decision from the statement's result
// is a pure function, tested on its own.
//
// Data source names: NormalizeDSN turns what a user gives for SQLite (a
// path or a file: URI) into a DSN with IMMEDIATE transactions and a busy
// timeout, and refuses deferred transactions and in-memory databases;
// for PostgreSQL and MySQL it refuses (ErrInvalidDSN) a DSN that the
// driver would not parse, without showing it. RedactDSN hides the password
// of a DSN in the URL, key=value and go-sql-driver/mysql forms for
// printing, and shows nothing of a DSN of none of these shapes; Scrub
// removes the password (or every piece of an unparsable DSN) from a
// driver's error text. They parse the DSN themselves, without the drivers.
//
// # Why it is safe
//
// In PostgreSQL and InnoDB the UPDATE takes the scope row's write lock and
// keeps it until the transaction ends. A stale writer that checks while a
// newer writer's transaction is open waits for that lock; when the newer
// one commits, the waiting check re-evaluates its WHERE against the
// committed row (PostgreSQL's READ COMMITTED re-check; InnoDB's locking
// read of the latest version), finds token above its own and matches
// nothing. The shared check's lock (FOR SHARE, LOCK IN SHARE MODE) is held
// the same way, and a raise's UPDATE must wait for every holder of it: so
// no write of token N commits after a raise to N+1 has committed, and after
// it every check of N finds the row at N+1. From the check to the commit no
// writer with a lower token can commit, and the writes of admitted
// transactions on one scope commit in token order. Transactions of one
// equal token share the lock and are not ordered by it (their own row
// locks order them, as without the fence). MySQL and MariaDB report changed
// rows, not matched rows, as affected: writes = writes + 1 makes the row
// change even when the exclusive check runs with a token equal to the
// floor.
//
// SQLite has no row locks: a write transaction must begin IMMEDIATE, taking
// the database's write lock at BEGIN, so that transactions run one at a
// time and none upgrades a read to a write (which fails with SQLITE_BUSY
// without waiting). Open it with SQLiteDSN, which sets _txlock=immediate
// and a busy timeout for modernc.org/sqlite (driver "sqlite").
//
// # What it does not promise
//
//   - Only writes made through fn's tx are fenced. Writes outside Do, in
//     another transaction or on another connection, by other programs, or
//     side effects in fn that are not in the database (a file, an HTTP
//     call), are not.
//   - The caller's isolation level (WithTxOptions) is theirs. The check is
//     safe at READ COMMITTED and above; PostgreSQL at REPEATABLE READ or
//     SERIALIZABLE returns a serialization error instead of the re-check
//     (nothing is committed; retry with a fresh Do). fn's own reads see
//     what that level gives them: the fence orders writers of one scope, it
//     does not make fn's reads of other rows current.
//   - Equal tokens are both admitted (the same holder retrying).
//   - The floor says nothing about whether a predecessor's last write
//     landed. Floor is a plain read, outdated as soon as it returns.
//   - When COMMIT was sent and its answer lost (a timeout, a connection
//     closed under it, a PostgreSQL FATAL or PANIC — only an ERROR says
//     for certain that nothing was committed), the transaction may or may
//     not have committed: Do
//     says so with ErrCommitUnknown, never "rolled back". Read before
//     retrying. go-sql-driver/mysql's COMMIT does not follow the context:
//     without readTimeout in the DSN it waits for that answer until TCP
//     gives up.
//   - fn must not end the transaction. Do checks before its COMMIT that
//     the connection is still in a transaction (pgx's transaction status,
//     the MySQL server's in-transaction flag that go-sql-driver keeps, or
//     @@in_transaction; SQLite's refusal of a nested BEGIN) and
//     returns ErrOutsideFence if not: fn's statements after a COMMIT,
//     ROLLBACK or MySQL's implicit commit (DDL) ran outside the fence. A
//     transaction fn ended and began anew (COMMIT; BEGIN, a MySQL
//     procedure that commits and starts a transaction) is told apart from
//     the fence's own only with WithSavepointCheck (a savepoint set after
//     the check must still be there before COMMIT; two round trips more),
//     which 'coordctl sql' uses.
//   - SQLite opened without IMMEDIATE transactions, or a table created by
//     hand without the primary key on scope, void the argument above (the
//     latter is detected: ErrBadTable). So does a MySQL table that is not
//     InnoDB (detected once per Fence, on first use: ErrNotTransactional;
//     an ALTER TABLE … ENGINE=MyISAM while a Fence is in use is not seen).
//   - fn must not write the fence table. Without WithRecheck nothing sees
//     it if fn does; with it, the scope's own row is read again before
//     COMMIT, but a statement of fn that lowers another scope's row is not
//     seen ('coordctl sql' also refuses statements that name the table).
//   - A raise waits for the shared locks of the token below it. On
//     PostgreSQL a new FOR SHARE does not queue behind a waiting UPDATE, so
//     a predecessor that keeps overlapping transactions going can hold a
//     raise back until its transactions leave a gap (InnoDB queues them).
//   - Scopes are at most fencing.MaxScopeLen bytes and compared byte for
//     byte (MySQL's column is VARBINARY, not a case-insensitive collation).
//
// The package imports no driver: the program picks one (github.com/jackc/
// pgx/v5/stdlib, github.com/go-sql-driver/mysql, modernc.org/sqlite are the
// ones tested). Package sqltest gives tests a fresh database per engine.
package sqlfence
