package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
)

func TestSQLBadFlags(t *testing.T) {
	t.Parallel()
	dsn := t.TempDir() + "/x.db"
	base := []string{"sql", "--driver", "sqlite", "--dsn", dsn}
	long := strings.Repeat("s", 513)
	cases := map[string]struct {
		args []string
		want string
	}{
		"token 0":          {append(base, "--scope", "s", "--token", "0", "-e", "SELECT 1"), "--token"},
		"negative token":   {append(base, "--scope", "s", "--token", "-3", "-e", "SELECT 1"), "--token"},
		"non-numeric":      {append(base, "--scope", "s", "--token", "abc", "-e", "SELECT 1"), "--token"},
		"no token":         {append(base, "--scope", "s", "-e", "SELECT 1"), "--token is required"},
		"empty scope":      {append(base, "--token", "1", "-e", "SELECT 1"), "--scope"},
		"long scope":       {append(base, "--scope", long, "--token", "1", "-e", "SELECT 1"), "longer than 512"},
		"no statement":     {append(base, "--scope", "s", "--token", "1"), "-e"},
		"empty statement":  {append(base, "--scope", "s", "--token", "1", "-e", " "), "empty"},
		"no driver":        {[]string{"sql", "--dsn", dsn, "--scope", "s", "--token", "1", "-e", "SELECT 1"}, "--driver"},
		"bad driver":       {[]string{"sql", "--driver", "oracle", "--dsn", dsn, "--scope", "s", "--token", "1", "-e", "SELECT 1"}, "--driver"},
		"no dsn":           {[]string{"sql", "--driver", "sqlite", "--scope", "s", "--token", "1", "-e", "SELECT 1"}, "--dsn"},
		"deferred sqlite":  {[]string{"sql", "--driver", "sqlite", "--dsn", "file:" + dsn + "?_txlock=deferred", "--scope", "s", "--token", "1", "-e", "SELECT 1"}, "_txlock"},
		"bad table":        {append(base, "--table", "x;drop", "--scope", "s", "--token", "1", "-e", "SELECT 1"), "--table"},
		"zero timeout":     {append(base, "--command-timeout", "0s", "--scope", "s", "--token", "1", "-e", "SELECT 1"), "--command-timeout"},
		"etcd flag":        {append(base, "--endpoints", "127.0.0.1:2379", "--scope", "s", "--token", "1", "-e", "SELECT 1"), "unknown flag"},
		"unknown sub":      {[]string{"sql", "flor", "--scope", "s"}, "did you mean floor"},
		"fence no token":   {[]string{"sql", "fence", "--driver", "sqlite", "--dsn", dsn, "--scope", "s"}, "--token"},
		"floor long scope": {[]string{"sql", "floor", "--driver", "sqlite", "--dsn", dsn, "--scope", long}, "--scope"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := runInProcess(context.Background(), nil, tc.args...)
			require.Equal(t, exitUsage, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
		})
	}
}

// sqlRun runs coordctl sql against db with the given environment.
func sqlRun(t *testing.T, db *sqltest.DB, env map[string]string, args ...string) cliResult {
	t.Helper()
	dsn := db.DSN
	if db.Dialect == sqlfence.SQLite {
		dsn = db.Name // a plain path, as a user gives it
	}
	full := append([]string{args[0], "--driver", db.Dialect.String(), "--dsn", dsn}, args[1:]...)
	if args[0] != "sql" {
		full = append([]string{"sql", args[0], "--driver", db.Dialect.String(), "--dsn", dsn}, args[1:]...)
	}
	return runInProcess(context.Background(), env, full...)
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

// The command on each engine: committed, stale (exit 5, nothing
// committed), a failing statement (exit 1, rolled back, the floor did not
// move), fence and floor, and the defaults from the environment.
func TestSQLEngines(t *testing.T) {
	t.Parallel()
	sqltest.Each(t, func(t *testing.T, db *sqltest.DB) {
		createReport(t, db)
		floor := func() string {
			res := sqlRun(t, db, nil, "floor", "--scope", "jobs/report")
			require.Equal(t, exitOK, res.Code, res.Stderr)
			return strings.TrimSpace(res.Stdout)
		}
		require.Equal(t, "0", floor())

		res := sqlRun(t, db, nil, "sql", "--scope", "jobs/report", "--token", "5", "-w", "json",
			"-e", "UPDATE report SET body = 'five' WHERE id = 1", "-e", "UPDATE report SET body = 'five' WHERE id = 2")
		require.Equal(t, exitOK, res.Code, res.Stderr)
		var out struct {
			Scope        string
			Token, Floor int64
			RowsAffected []int64 `json:"rows_affected"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.Stdout), &out), res.Stdout)
		require.Equal(t, "jobs/report", out.Scope)
		require.Equal(t, int64(5), out.Token)
		require.Equal(t, int64(5), out.Floor)
		require.Equal(t, []int64{1, 0}, out.RowsAffected)
		require.Equal(t, "five", reportBody(t, db))
		require.Equal(t, "5", floor())

		t.Run("stale", func(t *testing.T) {
			res := sqlRun(t, db, nil, "sql", "--scope", "jobs/report", "--token", "4", "-e", "UPDATE report SET body = 'four' WHERE id = 1")
			require.Equal(t, exitStale, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, "floor is 5")
			require.Contains(t, res.Stderr, "nothing was committed")
			require.Equal(t, "five", reportBody(t, db))
		})
		t.Run("failing statement", func(t *testing.T) {
			res := sqlRun(t, db, nil, "sql", "--scope", "jobs/report", "--token", "7",
				"-e", "UPDATE report SET body = 'seven' WHERE id = 1", "-e", "UPDATE no_such_table SET x = 1")
			require.Equal(t, exitError, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, "statement 2")
			require.Contains(t, res.Stderr, "nothing was committed")
			require.Equal(t, "five", reportBody(t, db), "the first statement was rolled back")
			require.Equal(t, "5", floor(), "the floor did not move")
		})
		t.Run("fence", func(t *testing.T) {
			res := sqlRun(t, db, nil, "fence", "--scope", "jobs/report", "--token", "9")
			require.Equal(t, exitOK, res.Code, res.Stderr)
			require.Equal(t, "ok scope=jobs/report token=9 floor=9\n", res.Stdout)
			require.Equal(t, "9", floor())
			res = sqlRun(t, db, nil, "fence", "--scope", "jobs/report", "--token", "8")
			require.Equal(t, exitStale, res.Code, res.Stderr)
			require.Equal(t, "9", floor())
		})
		t.Run("environment", func(t *testing.T) {
			env := map[string]string{"COORD_FENCING_TOKEN": "10", "COORD_LOCK_NAME": "jobs/report"}
			res := sqlRun(t, db, env, "sql", "-e", "UPDATE report SET body = 'ten' WHERE id = 1")
			require.Equal(t, exitOK, res.Code, res.Stderr)
			require.Equal(t, "ok scope=jobs/report token=10 floor=10 rows_affected=1\n", res.Stdout)
			require.Equal(t, "ten", reportBody(t, db))
			// COORD_FENCING_SCOPE comes before the lock's name.
			env = map[string]string{"COORD_FENCING_TOKEN": "3", "COORD_FENCING_SCOPE": "other", "COORD_LOCK_NAME": "jobs/report"}
			res = sqlRun(t, db, env, "sql", "-e", "UPDATE report SET body = 'other' WHERE id = 1")
			require.Equal(t, exitOK, res.Code, res.Stderr)
			require.Contains(t, res.Stdout, "scope=other token=3")
		})
	})
}

// A DSN that does not connect: exit 1, naming the host and not the
// password, in each DSN form.
func TestSQLUnreachable(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	for _, tc := range []struct{ driver, dsn string }{
		{"postgres", "postgres://root:s3cret@" + addr + "/test?sslmode=disable"},
		{"postgres", "host=" + host + " port=" + port + " user=root password=s3cret dbname=test sslmode=disable"},
		{"mysql", "root:s3cret@tcp(" + addr + ")/test"},
	} {
		t.Run(tc.dsn, func(t *testing.T) {
			res := runInProcess(context.Background(), nil, "sql", "--driver", tc.driver, "--dsn", tc.dsn,
				"--scope", "s", "--token", "1", "-e", "SELECT 1")
			require.Equal(t, exitError, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, "cannot connect")
			require.Contains(t, res.Stderr, port)
			require.NotContains(t, res.Stderr, "s3cret")
			require.Contains(t, res.Stderr, "xxxxx")
		})
	}
}

// A server that accepts connections and never answers: exit 1 when
// --command-timeout passes, saying so, not blaming etcd.
func TestSQLNoAnswerWithinCommandTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // read only after done
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	for _, tc := range []struct{ driver, dsn string }{
		{"postgres", "postgres://root:s3cret@" + ln.Addr().String() + "/test?sslmode=disable&connect_timeout=0"},
		{"mysql", "root:s3cret@tcp(" + ln.Addr().String() + ")/test"},
	} {
		t.Run(tc.driver, func(t *testing.T) {
			res := runInProcess(context.Background(), nil, "sql", "--command-timeout", "300ms", "--driver", tc.driver, "--dsn", tc.dsn,
				"--scope", "s", "--token", "1", "-e", "SELECT 1")
			require.Equal(t, exitError, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, "--command-timeout")
			require.Contains(t, res.Stderr, ln.Addr().String())
			require.NotContains(t, res.Stderr, "s3cret")
			require.NotContains(t, res.Stderr, "etcd")
		})
	}
}

func TestScenarioRunSQLFlags(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"driver without dsn": {"scenario", "run", "fenced-sql", "--driver", "postgres"},
		"dsn without driver": {"scenario", "run", "fenced-sql", "--dsn", "x.db"},
		"odd driver":         {"scenario", "run", "fenced-sql", "--driver", "oracle", "--dsn", "x"},
		"deferred sqlite":    {"scenario", "run", "fenced-sql", "--driver", "sqlite", "--dsn", "file:x.db?_txlock=deferred"},
	} {
		t.Run(name, func(t *testing.T) {
			res := runInProcess(context.Background(), nil, args...)
			require.Equal(t, exitUsage, res.Code, res.Stderr)
		})
	}
}

// scenario run fenced-sql on a database the user names: a SQLite path.
func TestScenarioRunFencedSQLOnGivenDatabase(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/given.db"
	res := runInProcess(context.Background(), nil, "scenario", "run", "fenced-sql", "--driver", "sqlite", "--dsn", path, "-w", "json")
	require.Equal(t, exitOK, res.Code, res.Stderr)
	var rep struct {
		Passed bool
		Claims []struct{ ID string }
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &rep), res.Stdout)
	require.True(t, rep.Passed)
	require.Len(t, rep.Claims, 4)
	db, err := sql.Open("sqlite", sqlfence.SQLiteDSN(path))
	require.NoError(t, err)
	defer db.Close()
	var tables int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'").Scan(&tables))
	require.Zero(t, tables, "the run dropped its tables from the given database")
}

// Interrupted (SIGINT cancels the context): nothing committed, exit 1 — not
// the exit 0 of an interrupted wait.
func TestSQLInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut strings.Builder
	code := run(ctx, []string{"sql", "--driver", "sqlite", "--dsn", t.TempDir() + "/x.db", "--scope", "s", "--token", "1", "-e", "SELECT 1"},
		ioStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, func(string) string { return "" })
	require.Equal(t, exitError, code, errOut.String())
	require.Contains(t, errOut.String(), "interrupted")
	require.Empty(t, out.String())
}

// Issue 25: a DSN that cannot be parsed exits 2 for every driver and is
// never echoed, not even in pieces through a driver's error.
func TestSQLUnparsableDSN(t *testing.T) {
	for _, tc := range []struct{ driver, dsn, secret string }{
		{"postgres", "postgres://nobody:TOPSECRET11@[::1", "TOPSECRET11"},
		{"postgres", "%%%postgres://nobody:TOPSECRET9@x", "TOPSECRET9"},
		{"postgres", "TOP@SECRET5", "SECRET5"},
		{"mysql", "nobody:MYSECRET2@tcp(127.0.0.1:3306/test", "MYSECRET2"},
		{"mysql", "TOP@SECRET7", "SECRET7"},
	} {
		t.Run(tc.driver+" "+tc.secret, func(t *testing.T) {
			for _, args := range [][]string{
				{"sql", "--scope", "s", "--token", "1", "-e", "SELECT 1"},
				{"sql", "fence", "--scope", "s", "--token", "1"},
				{"sql", "floor", "--scope", "s"},
				{"bench", "sql"},
			} {
				args = append(args, "--driver", tc.driver, "--dsn", tc.dsn, "--command-timeout", "2s")
				if args[0] == "bench" {
					args = args[:len(args)-2]
				}
				res := runInProcess(context.Background(), nil, args...)
				require.Equal(t, exitUsage, res.Code, "%v: %s", args, res.Stderr)
				require.Contains(t, res.Stderr, "--dsn")
				require.NotContains(t, res.Stderr, tc.secret)
				require.NotContains(t, res.Stdout, tc.secret)
			}
		})
	}
}

// Issue 25 item 1: a proxy in front of the server drops its replies once
// COMMIT is sent. The update and the floor 1000 are committed; the command
// must not say "nothing was committed": exit 6, "commit outcome unknown",
// and with -w json {"outcome":"unknown"}.
func TestSQLCommitAnswerLost(t *testing.T) {
	for _, d := range []sqlfence.Dialect{sqlfence.Postgres, sqlfence.MySQL} {
		t.Run(d.String(), func(t *testing.T) {
			db := sqltest.Open(t, d)
			createReport(t, db)
			res := sqlRun(t, db, nil, "fence", "--scope", "jobs/ack", "--token", "999")
			require.Equal(t, exitOK, res.Code, res.Stderr)

			p := sqltest.NewProxy(t, db)
			p.LoseCommitAnswers()
			res = runInProcess(context.Background(), nil, "sql", "--driver", d.String(), "--dsn", p.DSN,
				"--scope", "jobs/ack", "--token", "1000", "--command-timeout", "3s", "-w", "json",
				"-e", "UPDATE report SET body = 'ack-lost' WHERE id = 1")
			require.Equal(t, exitUnknown, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, "commit outcome unknown")
			require.NotContains(t, res.Stderr, "nothing was committed")
			var out struct{ Scope, Outcome, Error string }
			require.NoError(t, json.Unmarshal([]byte(res.Stdout), &out), res.Stdout)
			require.Equal(t, "unknown", out.Outcome)
			require.Equal(t, "jobs/ack", out.Scope)
			require.Contains(t, out.Error, "commit outcome unknown")

			// What the server did: committed (it had the COMMIT before the
			// client gave up; wait until it is visible).
			for {
				res = sqlRun(t, db, nil, "floor", "--scope", "jobs/ack")
				require.Equal(t, exitOK, res.Code, res.Stderr)
				if strings.TrimSpace(res.Stdout) == "1000" {
					break
				}
				time.Sleep(10 * time.Millisecond) // the server commits on its own; nothing to wait on
			}
			require.Equal(t, "ack-lost", reportBody(t, db))
		})
	}
}

// Issue 25 item 2: transaction control in -e is refused before anything
// runs (exit 2, naming the statement): before, "-e UPDATE -e COMMIT -e
// 'SELECT 1/0'" committed the update and the floor and said "rolled back".
func TestSQLRefusesTransactionControl(t *testing.T) {
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
				res := sqlRun(t, db, nil, "sql", "--scope", "jobs/report", "--token", "400",
					"-e", "UPDATE report SET body = 'four hundred' WHERE id = 1", "-e", tc.stmt, "-e", "SELECT 1/0")
				require.Equal(t, exitUsage, res.Code, res.Stderr)
				require.Contains(t, res.Stderr, "statement 2")
				require.Contains(t, res.Stderr, "transaction control ("+tc.name+")")
				require.Equal(t, "initial", reportBody(t, db))
				res = sqlRun(t, db, nil, "floor", "--scope", "jobs/report")
				require.Equal(t, exitOK, res.Code, res.Stderr)
				require.Equal(t, "0", strings.TrimSpace(res.Stdout))
			})
		}
		// Savepoints stay inside the transaction, after the check.
		res := sqlRun(t, db, nil, "sql", "--scope", "jobs/report", "--token", "401",
			"-e", "SAVEPOINT a", "-e", "UPDATE report SET body = 'kept' WHERE id = 1", "-e", "ROLLBACK TO SAVEPOINT a",
			"-e", "UPDATE report SET body = 'savepoint' WHERE id = 1", "-w", "json")
		require.Equal(t, exitOK, res.Code, res.Stderr)
		require.Contains(t, res.Stdout, `"outcome":"committed"`)
		require.Equal(t, "savepoint", reportBody(t, db))
	})
}
