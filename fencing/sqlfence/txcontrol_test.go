package sqlfence

import "testing"

func TestTransactionControl(t *testing.T) {
	all := []Dialect{Postgres, MySQL, SQLite}
	for _, tc := range []struct {
		sql      string
		dialects []Dialect // where it is refused; nil: nowhere
		want     string
	}{
		{"UPDATE report SET body = 'x' WHERE id = 1", nil, ""},
		{"COMMIT", all, "COMMIT"},
		{"commit", all, "COMMIT"},
		{"  \n\tCommit work", all, "COMMIT WORK"},
		{"END", all, "END"},
		{"end transaction", all, "END TRANSACTION"},
		{"BEGIN", all, "BEGIN"},
		{"begin immediate", all, "BEGIN IMMEDIATE"},
		{"START TRANSACTION", all, "START TRANSACTION"},
		{"ROLLBACK", all, "ROLLBACK"},
		{"rollback and chain", all, "ROLLBACK AND"},
		{"ABORT", all, "ABORT"},
		{"ROLLBACK TO SAVEPOINT a", nil, ""},
		{"ROLLBACK WORK TO a", nil, ""},
		{"SAVEPOINT a", nil, ""},
		{"RELEASE SAVEPOINT a", nil, ""},
		{"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", all, "SET TRANSACTION"},
		{"SET SESSION TRANSACTION READ WRITE", all, "SET SESSION TRANSACTION"},
		{"SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", all, "SET SESSION CHARACTERISTICS"},
		{"SET autocommit = 1", all, "SET AUTOCOMMIT"},
		{"set @@session.autocommit=1", all, "SET @@SESSION.AUTOCOMMIT"},
		{"SET search_path = app", nil, ""},
		{"PREPARE TRANSACTION 'x'", all, "PREPARE TRANSACTION"},
		{"COMMIT PREPARED 'x'", all, "COMMIT PREPARED"},
		{"XA START 'x'", all, "XA START"},
		{"UPDATE t SET a = 1; COMMIT", all, "COMMIT"},
		{"UPDATE t SET a = 1;COMMIT;SELECT 1", all, "COMMIT"},
		{"-- COMMIT\nUPDATE t SET a = 1", nil, ""},
		{"/* COMMIT */ UPDATE t SET a = 1", nil, ""},
		{"/* a */ COMMIT", all, "COMMIT"},
		{"-- note\nCOMMIT", all, "COMMIT"},
		{"/* nested /* COMMIT */ still a comment in postgres */ SELECT 1", nil, ""},
		{"UPDATE t SET s = 'a; COMMIT'", nil, ""},
		{"UPDATE t SET s = 'it''s; COMMIT'", nil, ""},
		{`UPDATE "commit" SET a = 1`, nil, ""},
		{"SELECT $$; COMMIT $$", []Dialect{MySQL, SQLite}, "COMMIT $$"}, // a dollar quote only in PostgreSQL
		{"SELECT $x$; COMMIT $x$", []Dialect{MySQL, SQLite}, "COMMIT $X$"},
		{"(COMMIT)", all, "COMMIT"},
		{"UPDATE t SET a = 1 WHERE b = 'commit'", nil, ""},
		{"CREATE TABLE x (id INT)", []Dialect{MySQL}, "CREATE TABLE"},
		{"create index i on t (a)", []Dialect{MySQL}, "CREATE INDEX"},
		{"CREATE TEMPORARY TABLE x (id INT)", nil, ""},
		{"DROP TABLE x", []Dialect{MySQL}, "DROP TABLE"},
		{"DROP TEMPORARY TABLE x", nil, ""},
		{"ALTER TABLE t ADD c INT", []Dialect{MySQL}, "ALTER TABLE"},
		{"TRUNCATE t", []Dialect{MySQL}, "TRUNCATE T"},
		{"LOCK TABLES t WRITE", []Dialect{MySQL}, "LOCK TABLES"},
		{"LOCK TABLE t IN EXCLUSIVE MODE", []Dialect{MySQL}, "LOCK TABLE"},
		{"GRANT SELECT ON t TO u", []Dialect{MySQL}, "GRANT SELECT"},
		{"SET PASSWORD = 'x'", []Dialect{MySQL}, "SET PASSWORD"},
		{"LOAD INDEX INTO CACHE t", []Dialect{MySQL}, "LOAD INDEX"},
		{"ANALYZE TABLE t", []Dialect{MySQL}, "ANALYZE TABLE"},
		{"/*!50000 COMMIT */", []Dialect{MySQL}, "COMMIT"},
		{"# COMMIT\nUPDATE t SET a = 1", nil, ""},
		// A backslash escapes on MySQL unless NO_BACKSLASH_ESCAPES, on
		// PostgreSQL when standard_conforming_strings is off: both readings count.
		{"UPDATE t SET s = 'a\\'; COMMIT'", all, "COMMIT"},
		{"UPDATE t SET s = E'a\\'; COMMIT'", []Dialect{MySQL, SQLite}, "COMMIT"},
		// Found by the adversarial pass (issue 25): each ran a COMMIT past the refusal.
		{"UPDATE t SET v = name'\\' WHERE id = 1; COMMIT; BEGIN; UPDATE t SET v = 'x'; SELECT 1 --'", all, "COMMIT"}, // name'...' is a typed literal, not E'...'
		{"SELECT '\\''; COMMIT; SELECT ''", []Dialect{Postgres, MySQL}, "COMMIT"},                                    // standard_conforming_strings = off
		{"SELECT \"\\\"; COMMIT; SELECT \"", all, "COMMIT"},                                                          // MySQL's ANSI_QUOTES: an identifier, no escapes
		{"UPDATE t SET n = n--1 WHERE id = 1; CREATE TABLE x (a INT)", []Dialect{MySQL}, "CREATE TABLE"},             // MySQL: -- needs a space to be a comment
		{"UPDATE t SET n = n--1 WHERE id = 1; COMMIT", []Dialect{MySQL}, "COMMIT"},
		{"UPDATE t SET n = n -- 1; COMMIT", nil, ""},
		{"UPDATE t SET n = 1 --\tCOMMIT", nil, ""},
		{"SELECT 1 --", nil, ""},
		{"/*M! COMMIT */", []Dialect{MySQL}, "COMMIT"}, // MariaDB's executable comment
		{"/*M!100100 CREATE TABLE x (a INT) */", []Dialect{MySQL}, "CREATE TABLE"},
		{"SET @a = 1, autocommit = 1", all, "SET AUTOCOMMIT"},
		{"SET @a = 1, @@session.autocommit = 0", all, "SET @@SESSION.AUTOCOMMIT"},
		{"SET @my_autocommit = 1", nil, ""},
		{"SET @a = 'autocommit'", nil, ""},
		{"SELECT 1 AS [']; COMMIT; BEGIN; SELECT 1 AS [']", []Dialect{SQLite}, "COMMIT"}, // SQLite's [identifier]
		{"SELECT [a;COMMIT] FROM t", []Dialect{Postgres, MySQL}, "COMMIT"},
		// Found by the re-pass (issue 25), each ran on MariaDB 10.11 past the refusal:
		// MariaDB's SET STATEMENT var = value FOR <statement> runs the statement.
		{"SET STATEMENT max_statement_time = 100 FOR COMMIT", []Dialect{MySQL}, "COMMIT"},
		{"set statement sql_mode = 'a;b', lock_wait_timeout = 5 for create table x (a int)", []Dialect{MySQL}, "CREATE TABLE"},
		{"SET STATEMENT max_statement_time = 1 FOR SELECT 1 FROM t FOR UPDATE", nil, ""},
		// ANSI_QUOTES without NO_BACKSLASH_ESCAPES: a backslash escapes in '...' but not in "..."
		// (with multiStatements=true the COMMIT ran and the UPDATE after it committed unfenced).
		{"SELECT 1 AS \"\\\", '\\'' ; COMMIT ; UPDATE t SET a = 1 -- '\"", []Dialect{Postgres, MySQL}, "COMMIT"},
		// DSN charset=gbk: 0xbf 0x5c is one character, the backslash escapes nothing.
		{"SELECT '\xbf\\' , ' -- ' , '\\'' ; COMMIT ; UPDATE t SET a = 1 -- '", []Dialect{MySQL}, "COMMIT"},
		// multiStatements=true: MySQL reads what follows a SET sql_mode under the new mode.
		{"SELECT '\\'' , ' -- ' ; SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES' ; SELECT 'a\\' ; COMMIT ; UPDATE t SET a = 1 -- '", []Dialect{MySQL}, "SET SQL_MODE"},
		{"SET NAMES gbk; SELECT 1", []Dialect{MySQL}, "SET NAMES"},
		{"SET @@sql_mode = 'ANSI_QUOTES'", nil, ""},
		{"SET NAMES utf8mb4", nil, ""},
		{"UPDATE t SET sql_mode = 1; SELECT 1", nil, ""},
	} {
		for _, d := range all {
			refused := false
			for _, r := range tc.dialects {
				refused = refused || r == d
			}
			got, ok := d.TransactionControl(tc.sql)
			if ok != refused || (ok && got != tc.want) {
				t.Errorf("%v: TransactionControl(%q) = %q, %v; want %q, %v", d, tc.sql, got, ok, tc.want, refused)
			}
		}
	}
}
