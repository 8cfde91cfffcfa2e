package root

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
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
		"all and scope":    {[]string{"sql", "floor", "--driver", "sqlite", "--dsn", dsn, "--all", "--scope", "s"}, "--all and --scope exclude each other"},
		"commit in -e":     {append(base, "--scope", "s", "--token", "1", "-e", "UPDATE t SET a = 1", "-e", "COMMIT"), "statement 2 (-e COMMIT) is transaction control (COMMIT)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := runInProcess(context.Background(), nil, tc.args...)
			require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
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
			require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
		})
	}
}

// scenario run fenced-sql on a database the user names: a SQLite path.
func TestScenarioRunFencedSQLOnGivenDatabase(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/given.db"
	res := runInProcess(context.Background(), nil, "scenario", "run", "fenced-sql", "--driver", "sqlite", "--dsn", path, "-w", "json")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
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
		cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, func(string) string { return "" })
	require.Equal(t, cmdutil.ExitError, code, errOut.String())
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
				require.Equal(t, cmdutil.ExitUsage, res.Code, "%v: %s", args, res.Stderr)
				require.Contains(t, res.Stderr, "--dsn")
				require.NotContains(t, res.Stderr, tc.secret)
				require.NotContains(t, res.Stdout, tc.secret)
			}
		})
	}
}

// The real run, wired: on a SQLite file, a statement, then the floor.
func TestSQLOnSQLite(t *testing.T) {
	t.Parallel()
	dsn := t.TempDir() + "/app.db"
	db, err := sql.Open("sqlite", sqlfence.SQLiteDSN(dsn))
	require.NoError(t, err)
	_, err = db.Exec("CREATE TABLE report (id INTEGER PRIMARY KEY)")
	require.NoError(t, err)
	require.NoError(t, db.Close())
	res := runInProcess(context.Background(), nil, "sql", "--driver", "sqlite", "--dsn", dsn, "--scope", "jobs/report", "--token", "5",
		"-e", "INSERT INTO report (id) VALUES (1)", "-e", "INSERT INTO report (id) VALUES (2), (3)")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Equal(t, "ok scope=jobs/report token=5 floor=5 rows_affected=1,2\n", res.Stdout)
	res = runInProcess(context.Background(), nil, "sql", "floor", "--driver", "sqlite", "--dsn", dsn, "--scope", "jobs/report")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Equal(t, "5\n", res.Stdout)
	res = runInProcess(context.Background(), nil, "sql", "fence", "--driver", "sqlite", "--dsn", dsn, "--scope", "jobs/report", "--token", "4")
	require.Equal(t, cmdutil.ExitStale, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "floor is 5")
}
