package coordkitpy_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
	"github.com/coordkit/coordkit/internal/testbin"
)

// TestFenceSQLPostgres runs the Python client's fence_sql on the test
// PostgreSQL through psycopg2, in a fresh database: FENCE_TABLE's columns
// take a token past 32 bits, a stale one is refused, a connection in
// autocommit mode (where the check would fence nothing) is refused, and
// transactions of the floor's token share the row's lock while a raise
// waits for them.
func TestFenceSQLPostgres(t *testing.T) {
	py := testbin.Python(t, "psycopg2", "python3-psycopg2")
	db := sqltest.Open(t, sqlfence.Postgres)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "-v", "test_coordkit.TestFenceSQLPostgres")
	cmd.Env = append(os.Environ(), "COORDKIT_TEST_PG_DSN="+db.DSN)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	require.NoError(t, err, "the Python test failed")
	require.Contains(t, string(out), "test_tokens_past_32_bits (test_coordkit.TestFenceSQLPostgres")
	require.Contains(t, string(out), "test_autocommit_refused (test_coordkit.TestFenceSQLPostgres")
	require.Contains(t, string(out), "test_one_token_side_by_side_a_raise_waits (test_coordkit.TestFenceSQLPostgres")
	require.NotContains(t, string(out), "skipped")
	require.True(t, strings.Contains(string(out), "\nOK"), "unittest did not report OK")
}

// TestFenceSQLMySQL runs the Python client's fence_sql on the test MariaDB
// (or MySQL) through PyMySQL, in a fresh database: FENCE_TABLE_MYSQL takes
// a token past 32 bits, a stale one is refused, autocommit and tables of
// other engines (MyISAM, MEMORY) are refused, a raise waits for an open
// transaction's row lock, and Python and Go's sqlfence fence each other on
// one table: a scope Go fenced refuses Python's lower token, and the floor
// Python raises is the one Go reads.
func TestFenceSQLMySQL(t *testing.T) {
	py := testbin.Python(t, "pymysql", "python3-pymysql")
	db := sqltest.Open(t, sqlfence.MySQL)
	cfg, err := mysql.ParseDSN(db.DSN)
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(cfg.Addr)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const scope, token = "py/mé/日本/", 100
	f, err := sqlfence.New(db.DB, sqlfence.MySQL)
	require.NoError(t, err)
	require.NoError(t, f.Fence(ctx, scope, token))

	const tests = "test_coordkit.TestFenceSQLMySQL"
	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "-v", tests)
	cmd.Env = append(os.Environ(),
		"COORDKIT_TEST_MYSQL_HOST="+host, "COORDKIT_TEST_MYSQL_PORT="+port,
		"COORDKIT_TEST_MYSQL_USER="+cfg.User, "COORDKIT_TEST_MYSQL_PASSWORD="+cfg.Passwd,
		"COORDKIT_TEST_MYSQL_DB="+cfg.DBName,
		fmt.Sprintf("COORDKIT_TEST_GO_FENCED=%s\t%d", scope, token))
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	require.NoError(t, err, "the Python test failed")
	for _, name := range []string{"test_tokens_past_32_bits", "test_autocommit_refused", "test_not_innodb_refused",
		"test_go_and_python_fence_each_other", "test_raise_waits_for_an_open_transaction"} {
		require.Contains(t, string(out), name+" ("+tests)
	}
	require.NotContains(t, string(out), "skipped")
	require.True(t, strings.Contains(string(out), "\nOK"), "unittest did not report OK")

	floor, err := f.Floor(ctx, scope)
	require.NoError(t, err)
	require.EqualValues(t, token+1, floor, "Go reads the floor Python raised")
	err = f.Do(ctx, scope, token, func(*sql.Tx) error { return nil })
	require.ErrorIs(t, err, fencing.ErrStale, "Go's holder of the token Python fenced out is refused")
}
