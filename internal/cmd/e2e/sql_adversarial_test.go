package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
)

// The adversarial pass after issue 25: each of these -e strings hides a
// statement that ends the fenced transaction from 'coordctl sql”s
// refusal (a string that ends elsewhere than the refusal read it, a
// comment that is not one, an executable comment, a quoted identifier).
// Before the fix they ran: the COMMIT released the fence row's lock, and
// with a BEGIN after it the run even exited 0, "committed". Now each is
// refused with exit 2 before anything runs: no row changed, no floor.
func TestSQLE2EHiddenTransactionControlIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d      sqlfence.Dialect
		params string
		stmts  []string
	}{
		{sqlfence.Postgres, "", []string{`UPDATE t SET v = name'\' WHERE id = 1; COMMIT; BEGIN; UPDATE t SET n = 100 WHERE id = 1; SELECT 1 --'`}},
		{sqlfence.Postgres, "", []string{"SET standard_conforming_strings = off", `UPDATE t SET n = 1 WHERE id = '\''; COMMIT; BEGIN; UPDATE t SET n = 100 WHERE id = 1; SELECT ''`}},
		{sqlfence.MySQL, "?multiStatements=true", []string{"UPDATE t SET n = n--1 WHERE id = 1; CREATE TABLE adv_ddl (x INT); UPDATE t SET n = 100 WHERE id = 1"}},
		{sqlfence.MySQL, "", []string{"UPDATE t SET n = 1 WHERE id = 1", "/*M! COMMIT */", "/*M! START TRANSACTION */", "UPDATE t SET n = 100 WHERE id = 1"}},
		{sqlfence.MySQL, "", []string{"SET sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')", `UPDATE t SET n = 1 WHERE id = 1 OR v = '\'; CREATE TABLE adv_ddl (x INT); SELECT '\'`}},
		{sqlfence.MySQL, "", []string{"UPDATE t SET n = 1 WHERE id = 1", "SET @a = 1, autocommit = 0", "SET @b = 1, autocommit = 1"}},
		{sqlfence.SQLite, "", []string{"UPDATE t SET n = 1 WHERE id = 1; SELECT 1 AS [']; COMMIT; BEGIN; UPDATE t SET n = 100 WHERE id = 1; SELECT 1 AS [']"}},
	} {
		t.Run(tc.d.String(), func(t *testing.T) {
			db := sqltest.Open(t, tc.d)
			_, err := db.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR(64), n INTEGER)")
			require.NoError(t, err)
			_, err = db.Exec("INSERT INTO t (id, v, n) VALUES (1, 'init', 0)")
			require.NoError(t, err)
			fence, err := sqlfence.New(db.DB, tc.d)
			require.NoError(t, err)
			dsn := db.DSN + tc.params
			if tc.d == sqlfence.SQLite {
				dsn = db.Name
			}
			args := []string{"sql", "--driver", tc.d.String(), "--dsn", dsn, "--scope", "adv", "--token", "7"}
			for _, s := range tc.stmts {
				args = append(args, "-e", s)
			}
			code, out, _ := runBinary(t, nil, args...)
			require.Equal(t, 2, code, out)
			require.Contains(t, out, "is transaction control")
			var n int
			require.NoError(t, db.QueryRow("SELECT n FROM t WHERE id = 1").Scan(&n))
			require.Zero(t, n, "a statement ran")
			floor, err := fence.Floor(testCtx(t), "adv")
			require.NoError(t, err)
			require.Zero(t, floor, "the floor moved")
		})
	}
}

// A MySQL stored procedure, or a prepared statement, that commits and
// starts a transaction ends the fenced one out of the refusal's sight
// (neither the procedure's body nor a statement built with CONCAT can be
// read), and leaves the connection in a transaction again: before the fix
// 'coordctl sql' exited 0, "committed", with the statements after it run
// without the fence row's lock. Now it exits 6, outcome outside_fence,
// and what was committed is what ran before that COMMIT.
func TestSQLE2ECommitAndBeginOutOfSightIsOutsideTheFence(t *testing.T) {
	t.Parallel()
	db := sqltest.Open(t, sqlfence.MySQL)
	for _, q := range []string{
		"CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR(64), n INTEGER)",
		"INSERT INTO t (id, v, n) VALUES (1, 'init', 0)",
		"CREATE PROCEDURE recommit() BEGIN COMMIT; START TRANSACTION; END",
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	for i, hidden := range [][]string{
		{"CALL recommit()"},
		{"PREPARE c FROM CONCAT('COM', 'MIT')", "EXECUTE c", "PREPARE b FROM 'START TRANSACTION'", "EXECUTE b"},
	} {
		args := []string{"sql", "--driver", "mysql", "--dsn", db.DSN, "--scope", "adv", "--token", fmt.Sprint(7 + i), "-w", "json",
			"-e", fmt.Sprintf("UPDATE t SET n = %d WHERE id = 1", i+1)}
		for _, h := range hidden {
			args = append(args, "-e", h)
		}
		code, out, _ := runBinary(t, nil, append(args, "-e", "UPDATE t SET v = 'after' WHERE id = 1")...)
		require.Equal(t, 6, code, out)
		line := out[:strings.IndexByte(out, '\n')+1]
		var res struct{ Outcome, Error string }
		require.NoError(t, json.Unmarshal([]byte(line), &res), out)
		require.Equal(t, "outside_fence", res.Outcome, out)
		var n int
		var v string
		require.NoError(t, db.QueryRow("SELECT n, v FROM t WHERE id = 1").Scan(&n, &v))
		require.Equal(t, fmt.Sprint(i+1, "init"), fmt.Sprint(n, v), "committed: the first UPDATE; rolled back: the one after")
	}
}
