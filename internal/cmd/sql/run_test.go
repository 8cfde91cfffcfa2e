package sqlcli_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	sqlcli "github.com/coordkit/coordkit/internal/cmd/sql"
	"github.com/coordkit/coordkit/internal/nettest"
)

// isUsage reports whether err is coordctl's usage error (exit 2).
func isUsage(err error) bool { var ue *cmdutil.UsageError; return errors.As(err, &ue) }

// config is the connection to db as a user gives it: a plain path for SQLite.
func config(db *sqltest.DB) sqlcli.Config {
	dsn := db.DSN
	if db.Dialect == sqlfence.SQLite {
		dsn = db.Name
	}
	return sqlcli.Config{Driver: db.Dialect.String(), DSN: dsn, Table: sqlfence.DefaultTable, Timeout: 30 * time.Second}
}

func run(t *testing.T, r sqlcli.Request) (sqlcli.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return sqlcli.Run(ctx, r)
}

// floor reads the floor of scope through Run.
func floor(t *testing.T, db *sqltest.DB, scope string) fencing.Token {
	t.Helper()
	res, err := run(t, sqlcli.Request{Config: config(db), Op: sqlcli.Floor, Scope: scope})
	require.NoError(t, err)
	return res.Floor
}

// text is r's text form.
func text(t *testing.T, r sqlcli.Result) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, r.WriteText(&b))
	return b.String()
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// createReport makes the business table: row 1 with body 'initial'.
func createReport(t *testing.T, db *sqltest.DB) {
	t.Helper()
	_, err := db.Exec("CREATE TABLE report (id INTEGER PRIMARY KEY, body VARCHAR(64) NOT NULL)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO report (id, body) VALUES (1, 'initial')")
	require.NoError(t, err)
}

func reportBody(t *testing.T, db *sqltest.DB) string {
	t.Helper()
	var body string
	require.NoError(t, db.QueryRow("SELECT body FROM report WHERE id = 1").Scan(&body))
	return body
}

// Each op on each engine: committed, stale (nothing committed), a failing
// statement (rolled back, the floor did not move), fence and floor, and
// each result's JSON and text form.
func TestRunEngines(t *testing.T) {
	t.Parallel()
	sqltest.Each(t, func(t *testing.T, db *sqltest.DB) {
		createReport(t, db)
		require.Equal(t, fencing.Token(0), floor(t, db, "jobs/report"))

		res, err := run(t, sqlcli.Request{Config: config(db), Op: sqlcli.Exec, Scope: "jobs/report", Token: 5,
			Statements: []string{"UPDATE report SET body = 'five' WHERE id = 1", "UPDATE report SET body = 'five' WHERE id = 2"}})
		require.NoError(t, err)
		require.JSONEq(t, `{"scope":"jobs/report","token":5,"floor":5,"rows_affected":[1,0],"outcome":"committed"}`, jsonOf(t, res))
		require.Equal(t, "ok scope=jobs/report token=5 floor=5 rows_affected=1,0\n", text(t, res))
		require.Equal(t, "five", reportBody(t, db))
		require.Equal(t, fencing.Token(5), floor(t, db, "jobs/report"))

		t.Run("stale", func(t *testing.T) {
			_, err := run(t, sqlcli.Request{Config: config(db), Op: sqlcli.Exec, Scope: "jobs/report", Token: 4,
				Statements: []string{"UPDATE report SET body = 'four' WHERE id = 1"}})
			require.ErrorIs(t, err, fencing.ErrStale)
			require.Contains(t, err.Error(), "floor is 5")
			require.Contains(t, err.Error(), "nothing was committed")
			require.Equal(t, "five", reportBody(t, db))
		})
		t.Run("failing statement", func(t *testing.T) {
			_, err := run(t, sqlcli.Request{Config: config(db), Op: sqlcli.Exec, Scope: "jobs/report", Token: 7,
				Statements: []string{"UPDATE report SET body = 'seven' WHERE id = 1", "UPDATE no_such_table SET x = 1"}})
			require.Error(t, err)
			require.NotErrorIs(t, err, fencing.ErrStale)
			var oe *sqlcli.OutcomeError
			require.False(t, errors.As(err, &oe), "a failed statement is not an unknown outcome: %v", err)
			require.Contains(t, err.Error(), "statement 2")
			require.Contains(t, err.Error(), "nothing was committed")
			require.Equal(t, "five", reportBody(t, db), "the first statement was rolled back")
			require.Equal(t, fencing.Token(5), floor(t, db, "jobs/report"), "the floor did not move")
		})
		t.Run("fence", func(t *testing.T) {
			res, err := run(t, sqlcli.Request{Config: config(db), Op: sqlcli.Fence, Scope: "jobs/report", Token: 9})
			require.NoError(t, err)
			require.Equal(t, "ok scope=jobs/report token=9 floor=9\n", text(t, res))
			require.JSONEq(t, `{"scope":"jobs/report","token":9,"floor":9,"outcome":"committed"}`, jsonOf(t, res))
			require.Equal(t, fencing.Token(9), floor(t, db, "jobs/report"))
			_, err = run(t, sqlcli.Request{Config: config(db), Op: sqlcli.Fence, Scope: "jobs/report", Token: 8})
			require.ErrorIs(t, err, fencing.ErrStale)
			require.Equal(t, fencing.Token(9), floor(t, db, "jobs/report"))
		})
		t.Run("floor", func(t *testing.T) {
			res, err := run(t, sqlcli.Request{Config: config(db), Op: sqlcli.Floor, Scope: "jobs/report"})
			require.NoError(t, err)
			require.Equal(t, "9\n", text(t, res), "the floor alone, for scripts")
			require.JSONEq(t, `{"scope":"jobs/report","floor":9}`, jsonOf(t, res))
		})
	})
}

// HighestFloor ('sql floor --all'): 0 and no scope on an empty table, then
// the highest floor and its scope.
func TestRunHighestFloor(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqltest.DB) {
		res, err := run(t, sqlcli.Request{Config: config(db), Op: sqlcli.HighestFloor})
		require.NoError(t, err)
		require.Equal(t, "0\n", text(t, res), "no scope yet")
		require.JSONEq(t, `{"scope":"","floor":0}`, jsonOf(t, res))
		for scope, tok := range map[string]fencing.Token{"jobs/a": 12, "jobs/b": 4711, "jobs/c": 300} {
			_, err := run(t, sqlcli.Request{Config: config(db), Op: sqlcli.Fence, Scope: scope, Token: tok})
			require.NoError(t, err)
		}
		res, err = run(t, sqlcli.Request{Config: config(db), Op: sqlcli.HighestFloor})
		require.NoError(t, err)
		require.Equal(t, "4711\n", text(t, res))
		require.JSONEq(t, `{"scope":"jobs/b","floor":4711}`, jsonOf(t, res))
	})
}

// A DSN that does not connect: the error names the host and not the
// password, in each DSN form.
func TestRunUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	for _, tc := range []struct{ driver, dsn string }{
		{"postgres", "postgres://root:s3cret@" + addr + "/test?sslmode=disable"},
		{"postgres", "host=" + host + " port=" + port + " user=root password=s3cret dbname=test sslmode=disable"},
		{"mysql", "root:s3cret@tcp(" + addr + ")/test"},
	} {
		t.Run(tc.dsn, func(t *testing.T) {
			_, err := run(t, sqlcli.Request{Config: sqlcli.Config{Driver: tc.driver, DSN: tc.dsn, Table: sqlfence.DefaultTable, Timeout: 5 * time.Second},
				Op: sqlcli.Exec, Scope: "s", Token: 1, Statements: []string{"SELECT 1"}})
			require.Error(t, err)
			require.False(t, isUsage(err), "not a usage error: %v", err)
			require.Contains(t, err.Error(), "cannot connect")
			require.Contains(t, err.Error(), port)
			require.NotContains(t, err.Error(), "s3cret")
			require.Contains(t, err.Error(), "xxxxx")
		})
	}
}

// A server that accepts connections and never answers: the error says
// that --command-timeout passed, and does not wrap
// context.DeadlineExceeded (which coordctl explains as etcd's silence).
func TestRunNoAnswerWithinCommandTimeout(t *testing.T) {
	t.Parallel()
	silent := nettest.Silent(t)
	for _, tc := range []struct{ driver, dsn string }{
		{"postgres", "postgres://root:s3cret@" + silent + "/test?sslmode=disable&connect_timeout=0"},
		{"mysql", "root:s3cret@tcp(" + silent + ")/test"},
	} {
		t.Run(tc.driver, func(t *testing.T) {
			_, err := run(t, sqlcli.Request{Config: sqlcli.Config{Driver: tc.driver, DSN: tc.dsn, Table: sqlfence.DefaultTable, Timeout: 300 * time.Millisecond},
				Op: sqlcli.Exec, Scope: "s", Token: 1, Statements: []string{"SELECT 1"}})
			require.Error(t, err)
			require.Contains(t, err.Error(), "--command-timeout")
			require.Contains(t, err.Error(), silent)
			require.NotContains(t, err.Error(), "s3cret")
			require.NotContains(t, err.Error(), "etcd")
			require.NotErrorIs(t, err, context.DeadlineExceeded)
		})
	}
}

// Cancelled (SIGINT): ErrInterrupted, nothing committed, and not
// context.Canceled (which coordctl treats as a clean stop, exit 0).
func TestRunInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := sqlcli.Run(ctx, sqlcli.Request{Config: sqlcli.Config{Driver: "sqlite", DSN: t.TempDir() + "/x.db", Table: sqlfence.DefaultTable, Timeout: time.Minute},
		Op: sqlcli.Exec, Scope: "s", Token: 1, Statements: []string{"SELECT 1"}})
	require.ErrorIs(t, err, sqlcli.ErrInterrupted)
	require.NotErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), "interrupted")
}

// Validate: every bad connection flag is a usage error, named as coordctl
// spells it, and a DSN that cannot be parsed is never echoed (issue 25).
func TestValidate(t *testing.T) {
	t.Parallel()
	dsn := t.TempDir() + "/x.db"
	ok := sqlcli.Config{Driver: "sqlite", DSN: dsn, Table: sqlfence.DefaultTable, Timeout: time.Second}
	require.NoError(t, ok.Validate())
	with := func(f func(*sqlcli.Config)) sqlcli.Config { c := ok; f(&c); return c }
	for name, tc := range map[string]struct {
		cfg  sqlcli.Config
		want string
	}{
		"no driver":       {with(func(c *sqlcli.Config) { c.Driver = "" }), "--driver is required: sqlite, postgres or mysql"},
		"bad driver":      {with(func(c *sqlcli.Config) { c.Driver = "oracle" }), `invalid --driver "oracle": want sqlite, postgres or mysql`},
		"no dsn":          {with(func(c *sqlcli.Config) { c.DSN = " " }), "--dsn is required"},
		"zero timeout":    {with(func(c *sqlcli.Config) { c.Timeout = 0 }), "invalid --command-timeout 0s: must be positive"},
		"deferred sqlite": {with(func(c *sqlcli.Config) { c.DSN = "file:" + dsn + "?_txlock=deferred" }), "invalid --dsn"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.cfg.Validate()
			require.True(t, isUsage(err), "a usage error: %v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	for _, tc := range []struct{ driver, dsn, secret string }{
		{"postgres", "postgres://nobody:TOPSECRET11@[::1", "TOPSECRET11"},
		{"postgres", "%%%postgres://nobody:TOPSECRET9@x", "TOPSECRET9"},
		{"postgres", "TOP@SECRET5", "SECRET5"},
		{"mysql", "nobody:MYSECRET2@tcp(127.0.0.1:3306/test", "MYSECRET2"},
		{"mysql", "TOP@SECRET7", "SECRET7"},
	} {
		t.Run(tc.driver+" "+tc.secret, func(t *testing.T) {
			err := with(func(c *sqlcli.Config) { c.Driver, c.DSN = tc.driver, tc.dsn }).Validate()
			require.True(t, isUsage(err), "a usage error: %v", err)
			require.Contains(t, err.Error(), "--dsn")
			require.NotContains(t, err.Error(), tc.secret)
		})
	}
	_, err := run(t, sqlcli.Request{Config: with(func(c *sqlcli.Config) { c.Table = "x;drop" }), Op: sqlcli.Floor, Scope: "s"})
	require.True(t, isUsage(err), "a usage error: %v", err)
	require.Contains(t, err.Error(), "invalid --table")
}

// Issue 25 item 1: a proxy in front of the server drops its replies once
// COMMIT is sent. The update and the floor 1000 are committed; Run must not
// say "nothing was committed": an *OutcomeError, "commit outcome unknown",
// matching sqlfence.ErrCommitUnknown, whose JSON says {"outcome":"unknown"}.
func TestRunCommitAnswerLost(t *testing.T) {
	for _, d := range []sqlfence.Dialect{sqlfence.Postgres, sqlfence.MySQL} {
		t.Run(d.String(), func(t *testing.T) {
			db := sqltest.Open(t, d)
			createReport(t, db)
			_, err := run(t, sqlcli.Request{Config: config(db), Op: sqlcli.Fence, Scope: "jobs/ack", Token: 999})
			require.NoError(t, err)

			p := sqltest.NewProxy(t, db)
			p.LoseCommitAnswers()
			cfg := config(db)
			cfg.DSN, cfg.Timeout = p.DSN, 3*time.Second
			_, err = run(t, sqlcli.Request{Config: cfg, Op: sqlcli.Exec, Scope: "jobs/ack", Token: 1000,
				Statements: []string{"UPDATE report SET body = 'ack-lost' WHERE id = 1"}})
			require.ErrorIs(t, err, sqlfence.ErrCommitUnknown)
			require.Contains(t, err.Error(), "commit outcome unknown")
			require.NotContains(t, err.Error(), "nothing was committed")
			var oe *sqlcli.OutcomeError
			require.ErrorAs(t, err, &oe)
			require.Equal(t, sqlcli.Unknown, oe.Outcome)
			var out struct {
				Scope, Outcome, Error string
				Token                 int64
			}
			require.NoError(t, json.Unmarshal([]byte(jsonOf(t, oe)), &out))
			require.Equal(t, "unknown", out.Outcome)
			require.Equal(t, "jobs/ack", out.Scope)
			require.Equal(t, int64(1000), out.Token)
			require.Contains(t, out.Error, "commit outcome unknown")

			// What the server did: committed (it had the COMMIT before the
			// client gave up; wait until it is visible).
			for floor(t, db, "jobs/ack") != 1000 {
				time.Sleep(10 * time.Millisecond) // the server commits on its own; nothing to wait on
			}
			require.Equal(t, "ack-lost", reportBody(t, db))
		})
	}
}

// Issue 25 item 2: transaction control among the statements is refused
// before anything runs, naming the statement: before, "UPDATE; COMMIT;
// SELECT 1/0" committed the update and the floor and said "rolled back".
func TestRunRefusesTransactionControl(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqltest.DB) {
		createReport(t, db)
		cases := []struct {
			stmt, name string
		}{
			{"COMMIT", "COMMIT"},
			{"/* done */ commit", "COMMIT"},
			{"SELECT 1; END", "END"},
			{"ROLLBACK", "ROLLBACK"},
			{"BEGIN", "BEGIN"},
			{"START TRANSACTION", "START TRANSACTION"},
			{"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "SET TRANSACTION"},
		}
		if db.Dialect == sqlfence.MySQL {
			cases = append(cases, struct{ stmt, name string }{"CREATE TABLE t2 (id INT)", "CREATE TABLE"})
		}
		for _, tc := range cases {
			t.Run(tc.stmt, func(t *testing.T) {
				_, err := run(t, sqlcli.Request{Config: config(db), Op: sqlcli.Exec, Scope: "jobs/report", Token: 400,
					Statements: []string{"UPDATE report SET body = 'four hundred' WHERE id = 1", tc.stmt, "SELECT 1/0"}})
				require.True(t, isUsage(err), "a usage error: %v", err)
				require.Contains(t, err.Error(), "statement 2")
				require.Contains(t, err.Error(), "transaction control ("+tc.name+")")
				require.Equal(t, "initial", reportBody(t, db))
				require.Equal(t, fencing.Token(0), floor(t, db, "jobs/report"))
			})
		}
		// Savepoints stay inside the transaction, after the check.
		res, err := run(t, sqlcli.Request{Config: config(db), Op: sqlcli.Exec, Scope: "jobs/report", Token: 401,
			Statements: []string{"SAVEPOINT a", "UPDATE report SET body = 'kept' WHERE id = 1", "ROLLBACK TO SAVEPOINT a",
				"UPDATE report SET body = 'savepoint' WHERE id = 1"}})
		require.NoError(t, err)
		require.Equal(t, sqlcli.Committed, res.Outcome)
		require.Equal(t, "savepoint", reportBody(t, db))
	})
}

// Validate of Exec's statements: at least one, none empty.
func TestValidateStatements(t *testing.T) {
	t.Parallel()
	cfg := sqlcli.Config{Driver: "sqlite", DSN: t.TempDir() + "/x.db", Table: sqlfence.DefaultTable, Timeout: time.Second}
	for name, tc := range map[string]struct {
		stmts []string
		want  string
	}{
		"none":  {nil, "give at least one statement with -e"},
		"empty": {[]string{"SELECT 1", " "}, "statement 2 (-e) is empty"},
		"fence table": {[]string{"UPDATE report SET body = 'x'", "UPDATE Coordkit_Fence SET token = 1"},
			"statement 2 (-e UPDATE Coordkit_Fence SET token = 1) names the fence table coordkit_fence"},
		"fence table quoted":      {[]string{`DELETE FROM "coordkit_fence"`}, "names the fence table"},
		"fence table in a string": {[]string{`SELECT run('UPDATE coordkit_fence SET token = 1')`}, "names the fence table"},
	} {
		t.Run(name, func(t *testing.T) {
			err := sqlcli.Request{Config: cfg, Op: sqlcli.Exec, Scope: "s", Token: 1, Statements: tc.stmts}.Validate()
			require.True(t, isUsage(err), "a usage error: %v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	require.NoError(t, sqlcli.Request{Config: cfg, Op: sqlcli.Fence, Scope: "s", Token: 1}.Validate(), "fence takes no statements")
	// A longer name that holds the table's is another table.
	require.NoError(t, sqlcli.Request{Config: cfg, Op: sqlcli.Exec, Scope: "s", Token: 1,
		Statements: []string{"UPDATE coordkit_fence_log SET n = 1", "UPDATE my_coordkit_fence SET n = 1"}}.Validate())
}

// Issue 31: a MyISAM fence table made beforehand is refused before any
// statement runs (not a usage error: exit 1), naming table and engine.
func TestRunRefusesNonTransactionalTable(t *testing.T) {
	t.Parallel()
	db := sqltest.Open(t, sqlfence.MySQL)
	createReport(t, db)
	_, err := db.Exec("CREATE TABLE coordkit_fence (scope VARBINARY(512) NOT NULL PRIMARY KEY, token BIGINT NOT NULL, writes BIGINT NOT NULL) ENGINE=MyISAM")
	require.NoError(t, err)
	for _, op := range []sqlcli.Op{sqlcli.Exec, sqlcli.Fence} {
		_, err = run(t, sqlcli.Request{Config: config(db), Op: op, Scope: "jobs/", Token: 100,
			Statements: []string{"UPDATE report SET body = 'A' WHERE id = 1"}})
		require.ErrorIs(t, err, sqlfence.ErrNotTransactional)
		require.False(t, isUsage(err), "not a usage error: %v", err)
		require.ErrorContains(t, err, "coordkit_fence uses engine MyISAM")
		require.ErrorContains(t, err, "nothing was written")
	}
	require.Equal(t, "initial", reportBody(t, db))
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM coordkit_fence").Scan(&n))
	require.Zero(t, n)
}

// Issue 31: a failed statement's rollback promises only what a rollback
// does: nothing committed in transactional tables. On MariaDB a MyISAM
// business table written before the failure keeps its row.
func TestRunFailureSaysTransactionalTables(t *testing.T) {
	t.Parallel()
	db := sqltest.Open(t, sqlfence.MySQL)
	_, err := db.Exec("CREATE TABLE audit (id INTEGER PRIMARY KEY) ENGINE=MyISAM")
	require.NoError(t, err)
	_, err = run(t, sqlcli.Request{Config: config(db), Op: sqlcli.Exec, Scope: "jobs/", Token: 3,
		Statements: []string{"INSERT INTO audit (id) VALUES (1)", "INSERT INTO no_such_table VALUES (1)"}})
	require.Error(t, err)
	require.ErrorContains(t, err, "rolled back, nothing was committed in transactional tables")
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM audit").Scan(&n))
	require.Equal(t, 1, n, "what the message must not deny: MyISAM kept the row")
	require.Zero(t, floor(t, db, "jobs/"))
}

// TestValidateMultiStatementsOnMySQL: with multiStatements=true the server
// reads each statement of one text with the settings the one before it
// set, which no text check can follow (a charset or sql_mode change hides
// a COMMIT from it): such a text is refused, one statement per -e is not.
func TestValidateMultiStatementsOnMySQL(t *testing.T) {
	t.Parallel()
	multi := sqlcli.Config{Driver: "mysql", DSN: "root@tcp(127.0.0.1:3306)/test?multiStatements=true", Table: sqlfence.DefaultTable, Timeout: time.Second}
	plain := multi
	plain.DSN = "root@tcp(127.0.0.1:3306)/test"
	req := func(c sqlcli.Config, stmts ...string) error {
		return sqlcli.Request{Config: c, Op: sqlcli.Exec, Scope: "s", Token: 1, Statements: stmts}.Validate()
	}
	// The re-pass's bypass: a mode change partway through one text.
	hidden := "SELECT '\\'' , ' -- ' ; SET SESSION sql_mode='NO_BACKSLASH_ESCAPES' ; SELECT 'a\\' ; COMMIT ; UPDATE t SET n = 1 -- '"
	err := req(multi, "UPDATE t SET n = 1", hidden)
	require.True(t, isUsage(err), "a usage error: %v", err)
	require.Contains(t, err.Error(), "statement 2 (-e")
	// Two plain statements in one text: nothing for the text check to find,
	// refused all the same.
	err = req(multi, "UPDATE t SET n = 1; UPDATE t SET m = 2")
	require.True(t, isUsage(err), "a usage error: %v", err)
	require.Contains(t, err.Error(), "statement 1 (-e")
	require.Contains(t, err.Error(), "multiStatements=true")
	require.Contains(t, err.Error(), "a ';' inside a string counts too")
	require.NoError(t, req(multi, "UPDATE t SET n = 1;", "UPDATE t SET m = 2 ;\n"), "one statement per -e, a trailing ';' allowed")
	require.NoError(t, req(plain, "UPDATE t SET body = 'a;b'"), "without multiStatements the server takes one statement per text")
}
