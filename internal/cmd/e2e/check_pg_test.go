package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
)

// The built binary, with process clients, in a fresh database: three
// rows (the advisory lock unfenced and fenced, coordkit fenced) and a
// summary; the fenced ones pass. What the unfenced one finds depends on
// timing and is not asserted.
func TestCheckPGAdvisoryBinary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("three 5-second checks")
	}
	db := sqltest.Open(t, sqlfence.Postgres)
	out, stderr := runBinaryLong(t, "-w", "json", "check", "lock-safety", "--lock", "pg-advisory", "--dsn", db.DSN,
		"--duration", "5s", "--seed", "1")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 4, string(out))
	want := []struct{ lock, mode string }{{"pg-advisory", "unfenced"}, {"pg-advisory", "fenced"}, {"coordkit", "fenced"}}
	for i, w := range want {
		var r struct {
			Lock, Mode, Resource string
			Passed               bool
			Violations           int
		}
		require.NoError(t, json.Unmarshal([]byte(lines[i]), &r), lines[i])
		require.Equal(t, w.lock, r.Lock, lines[i])
		require.Equal(t, w.mode, r.Mode, lines[i])
		require.Equal(t, "sql", r.Resource)
		if w.mode == "fenced" {
			require.True(t, r.Passed, lines[i])
			require.Zero(t, r.Violations, lines[i])
		}
	}
	require.Contains(t, lines[3], `"summary":true`)
	require.NotContains(t, string(out)+stderr, db.DSN, "the DSN is not printed")
	var left int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM pg_class WHERE relname LIKE 'coordkit_safety_%'").Scan(&left))
	require.Zero(t, left, "the runs drop their tables and sequences")
}

// runBinaryLong runs the built coordctl (built before the clock starts) for
// up to 5 minutes, requires exit 0 and returns its stdout and stderr: the
// runs against PostgreSQL start an etcd or a cluster and hold processes,
// which on a loaded machine takes longer than runBinary allows.
func runBinaryLong(t *testing.T, args ...string) (stdout []byte, stderr string) {
	t.Helper()
	bin := coordctlBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	require.NoError(t, err, errb.String())
	return out, errb.String()
}
