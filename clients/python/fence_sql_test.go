package coordkitpy_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
	"github.com/coordkit/coordkit/internal/testbin"
)

// TestFenceSQLPostgres runs the Python client's fence_sql on the test
// PostgreSQL through psycopg2, in a fresh database: FENCE_TABLE's columns
// take a token past 32 bits, a stale one is refused, and a connection in
// autocommit mode (where the check would fence nothing) is refused.
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
	require.NotContains(t, string(out), "skipped")
	require.True(t, strings.Contains(string(out), "\nOK"), "unittest did not report OK")
}
