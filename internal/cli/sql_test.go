package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"net"
	"strings"
	"testing"

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
		_, err := db.Exec("CREATE TABLE report (id INTEGER PRIMARY KEY, body VARCHAR(64) NOT NULL)")
		require.NoError(t, err)
		_, err = db.Exec("INSERT INTO report (id, body) VALUES (1, 'initial')")
		require.NoError(t, err)
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
