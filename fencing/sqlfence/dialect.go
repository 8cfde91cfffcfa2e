package sqlfence

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Dialect is the SQL engine a Fence talks to: it chooses placeholders,
// column types and the insert-if-missing statement. The zero Dialect is
// not valid.
type Dialect int

// The supported dialects.
const (
	// Postgres is PostgreSQL (driver github.com/jackc/pgx/v5/stdlib, "pgx").
	Postgres Dialect = iota + 1
	// MySQL is MySQL or MariaDB with InnoDB (driver
	// github.com/go-sql-driver/mysql, "mysql").
	MySQL
	// SQLite is SQLite (driver modernc.org/sqlite, "sqlite"); open it with
	// SQLiteDSN so that transactions start IMMEDIATE.
	SQLite
)

// ParseDialect maps a driver or engine name to its Dialect: "postgres",
// "postgresql" or "pgx"; "mysql" or "mariadb"; "sqlite" or "sqlite3".
// Other names give an error wrapping ErrUnknownDialect.
func ParseDialect(name string) (Dialect, error) {
	switch strings.ToLower(name) {
	case "postgres", "postgresql", "pgx":
		return Postgres, nil
	case "mysql", "mariadb":
		return MySQL, nil
	case "sqlite", "sqlite3":
		return SQLite, nil
	}
	return 0, fmt.Errorf("%w %q (want postgres, mysql or sqlite)", ErrUnknownDialect, name)
}

// String returns "postgres", "mysql" or "sqlite".
func (d Dialect) String() string {
	switch d {
	case Postgres:
		return "postgres"
	case MySQL:
		return "mysql"
	case SQLite:
		return "sqlite"
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

// DriverName is the database/sql driver name this package is tested with:
// "pgx", "mysql" or "sqlite". The caller imports the driver.
func (d Dialect) DriverName() string {
	switch d {
	case Postgres:
		return "pgx"
	case MySQL:
		return "mysql"
	case SQLite:
		return "sqlite"
	}
	return ""
}

func (d Dialect) valid() bool { return d >= Postgres && d <= SQLite }

// scopeColumn is the scope column's type. It holds fencing.MaxScopeLen
// bytes. MySQL's is binary so that scopes compare byte for byte, not by a
// case-insensitive collation ("Jobs" and "jobs" are two scopes).
func (d Dialect) scopeColumn() string {
	switch d {
	case MySQL:
		return fmt.Sprintf("VARBINARY(%d)", maxScopeBytes)
	case SQLite:
		return "TEXT"
	}
	return fmt.Sprintf("VARCHAR(%d)", maxScopeBytes)
}

// statements are the SQL texts of one dialect and table.
type statements struct {
	create string
	probe  string // succeeds iff the table exists
	insert string // the scope's row at token 0, nothing if it exists
	check  string // the fence check: one row affected iff admitted
	// share is the check when the token is expected to equal the floor:
	// it selects the row iff its token equals the token, under a shared
	// row lock (PostgreSQL FOR SHARE, one row affected; SQLite a COUNT,
	// its IMMEDIATE transaction excluding every other writer; MySQL uses
	// shareLiteral). A raise (the exclusive check) waits for that lock.
	share string
	// recheck counts the scope's rows holding the admitted token, before
	// COMMIT (placeholders: scope, token; MySQL uses recheckLiteral).
	recheck string
	// engine reads a MySQL table's engine: placeholders schema (NULL for
	// the current database) and table.
	engine string
	floor  string
	table  string
}

// checkLiteral is the check with token and scope written into the text
// instead of bound as parameters, so that the driver sends it as one
// plain query: no prepare round trip (go-sql-driver/mysql without
// interpolateParams prepares every statement with arguments), and it can
// travel in one message with BEGIN. The scope is written so that no byte
// of it can end the literal: MySQL a hex literal (the column is binary),
// PostgreSQL an E” string with backslash and quote escaped (safe whatever
// standard_conforming_strings says), SQLite a ” string with quotes
// doubled (SQLite has no backslash escapes). Scopes are valid UTF-8
// without control characters (fencing.ValidateScope).
func (d Dialect) checkLiteral(table, scope string, token int64) string {
	tok := strconv.FormatInt(token, 10)
	return fmt.Sprintf("UPDATE %s SET token = %s, writes = writes + 1 WHERE scope = %s AND token <= %s", table, tok, d.scopeLiteral(scope), tok)
}

// pgEscape escapes a scope for PostgreSQL's E” string (scopeLiteral);
// built once, as building a Replacer costs more than using it.
var pgEscape = strings.NewReplacer(`\`, `\\`, `'`, `\'`)

// scopeLiteral is scope as an SQL literal (see checkLiteral).
func (d Dialect) scopeLiteral(scope string) string {
	switch d {
	case MySQL:
		return "X'" + hex.EncodeToString([]byte(scope)) + "'"
	case Postgres:
		return "E'" + pgEscape.Replace(scope) + "'"
	}
	return "'" + strings.ReplaceAll(scope, "'", "''") + "'"
}

// shareLiteral is the shared check (see statements.share) with token and
// scope written into the text, for MySQL: one plain query, no prepare.
func (d Dialect) shareLiteral(table, scope string, token int64) string {
	return fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE scope = %s AND token = %d LOCK IN SHARE MODE", table, d.scopeLiteral(scope), token)
}

// recheckLiteral is the re-check before COMMIT (statements.recheck) with
// token and scope written into the text, for MySQL.
func (d Dialect) recheckLiteral(table, scope string, token int64) string {
	return fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE scope = %s AND token = %d", table, d.scopeLiteral(scope), token)
}

// movedMarker is the word recheckRaising's PostgreSQL error carries.
const movedMarker = "coordkit_fence_moved"

// recheckRaising is the re-check as a statement that fails when the row
// no longer holds token, so that it can travel with COMMIT in one message
// (DoConn): the server runs nothing after a failed statement of a
// multi-statement query, so the COMMIT does not run. PostgreSQL fails a
// cast of movedMarker (22P02; the CASE depends on the aggregate, so it is
// not folded at planning), an EXECUTE of the statement pgPrepares
// prepared; MySQL a scalar subquery of two rows (1242).
func (d Dialect) recheckRaising(table, scope string, token int64) string {
	if d == MySQL {
		return fmt.Sprintf("SELECT (SELECT 1 UNION ALL SELECT 2 FROM DUAL WHERE NOT EXISTS (SELECT 1 FROM %s WHERE scope = %s AND token = %d))", table, d.scopeLiteral(scope), token)
	}
	return fmt.Sprintf("EXECUTE %s(%d, %s)", pgName("recheck", table), token, d.scopeLiteral(scope))
}

// pgName is the name of a statement pgPrepares prepares for table.
func pgName(what, table string) string {
	return "coordkit_" + what + "_" + strings.ReplaceAll(table, ".", "__")
}

// pgPrepared is, for PostgreSQL's DoConn, the name of the check prepared on
// a connection (with shared, the shared check): "BEGIN; EXECUTE
// name(token, scope)" travels as one simple query, like the literal check,
// but the server plans the check once per connection instead of once per
// transaction.
func pgPrepared(table string, shared bool) string {
	if shared {
		return pgName("share", table)
	}
	return pgName("check", table)
}

// pgPrepares are the PREPAREs of DoConn's statements on PostgreSQL, run
// together the first time a connection lacks one: the exclusive check, the
// shared check and the re-check sent with COMMIT (so that, once the check
// ran, the re-check is there too).
func pgPrepares(table string) []string {
	return []string{
		fmt.Sprintf("PREPARE %s (BIGINT, TEXT) AS UPDATE %s SET token = $1, writes = writes + 1 WHERE scope = $2 AND token <= $1", pgName("check", table), table),
		fmt.Sprintf("PREPARE %s (BIGINT, TEXT) AS SELECT 1 FROM %s WHERE scope = $2 AND token = $1 FOR SHARE", pgName("share", table), table),
		fmt.Sprintf("PREPARE %s (BIGINT, TEXT) AS SELECT CAST(CASE WHEN COUNT(*) = 1 THEN '1' ELSE '%s' END AS INT) FROM %s WHERE scope = $2 AND token = $1",
			pgName("recheck", table), movedMarker, table),
	}
}

func (d Dialect) statements(table string) statements {
	p := func(n int) string {
		if d == Postgres {
			return "$" + strconv.Itoa(n)
		}
		return "?"
	}
	intType, suffix := "BIGINT", ""
	switch d {
	case SQLite:
		intType = "INTEGER"
	case MySQL:
		suffix = " ENGINE=InnoDB"
	}
	st := statements{
		table: table,
		create: fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (scope %s NOT NULL PRIMARY KEY, token %s NOT NULL, writes %s NOT NULL)%s",
			table, d.scopeColumn(), intType, intType, suffix),
		probe: fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE 1 = 0", table),
		check: fmt.Sprintf("UPDATE %s SET token = %s, writes = writes + 1 WHERE scope = %s AND token <= %s",
			table, p(1), p(2), p(3)),
		floor:   fmt.Sprintf("SELECT token FROM %s WHERE scope = %s", table, p(1)),
		recheck: fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE scope = %s AND token = %s", table, p(1), p(2)),
		share:   fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE scope = %s AND token = %s", table, p(1), p(2)),
	}
	switch d {
	case Postgres:
		// No COUNT: PostgreSQL takes no row lock under an aggregate.
		st.share = fmt.Sprintf("SELECT 1 FROM %s WHERE scope = $1 AND token = $2 FOR SHARE", table)
	case MySQL:
		st.engine = "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?"
	}
	switch d {
	case MySQL:
		// Not INSERT IGNORE: that would also turn other errors into warnings.
		st.insert = fmt.Sprintf("INSERT INTO %s (scope, token, writes) VALUES (?, 0, 0) ON DUPLICATE KEY UPDATE scope = scope", table)
	default:
		st.insert = fmt.Sprintf("INSERT INTO %s (scope, token, writes) VALUES (%s, 0, 0) ON CONFLICT (scope) DO NOTHING", table, p(1))
	}
	return st
}
