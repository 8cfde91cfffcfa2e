// Package pglock is coordkit's adapter for the other lock teams pick instead
// of etcd: a PostgreSQL session-level advisory lock, pg_advisory_lock(key),
// held on a dedicated connection (the lock connection) while the protected
// writes go through other connections from a pool, which is how the Go
// libraries that elect leaders or run cron jobs on PostgreSQL use it. It
// exists so that benchmarks and safety checks can put it next to coordkit's
// lock, on the same work, in the same run; coordkit's own code never locks
// with it.
//
// A Lock is one name on one lock connection (pgx, not database/sql: a
// database/sql pool would hand the lock's session to anyone). Lock blocks
// in pg_advisory_lock, which the server wakes when the holder's session
// releases or ends, so a waiter is served without polling. Token takes a
// number from a sequence on the lock connection itself: it succeeds only
// while the session, and so the lock, is alive, so successive holders of a
// name get increasing numbers, usable as fencing tokens with
// fencing/sqlfence. Acquire does the three steps (open, lock within a
// bound, token) a holder process takes, and its errors name the step that
// failed.
//
// Keys: Key(name) is the first 8 bytes of the SHA-256 of the name, read
// big-endian as a signed 64-bit integer: stable across processes, versions
// and machines, so any client (psql included) can compute it:
//
//	SELECT ('x' || left(encode(sha256(convert_to(NAME, 'UTF8')), 'hex'), 16))::bit(64)::bigint
//
// Advisory locks are per database; two names may hash to one key (with 2^64
// keys, not in practice).
//
// What is guaranteed is what PostgreSQL guarantees, and no more: while the
// lock connection's session lives on the server, no other session holds the
// key. The lock lives in the memory of one server: it is not replicated, a
// failover to a standby loses it, and nothing persists it. The server
// releases it when the session ends: at once when the client's socket
// closes (a killed process), but for a partitioned or frozen client only
// when the server's TCP keepalives give up (tcp_keepalives_idle + interval
// × count; the server's default follows the OS, two hours and more) or
// never (a frozen process whose kernel still answers keeps its lock). A
// holder whose session the server ended learns it only when it next uses
// the lock connection: writes on its other connections go on. Alive says
// whether the lock connection is known to be closed, without I/O. Lock on
// a handle that holds is refused (the server would stack the lock:
// pg_advisory_lock is re-entrant and needs one unlock per lock). Behind
// PgBouncer's transaction pooling a session lock is meaningless: use a
// direct connection.
package pglock
