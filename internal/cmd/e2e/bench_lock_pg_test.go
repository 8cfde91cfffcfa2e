package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
)

// The built binary against the advisory lock in a fresh database: the
// pg_advisory column on every row, and the crash handoff measured with
// holder processes killed (coordkit's too; etcd_concurrency has none:
// null). Not performance, except one thing that does not depend on load:
// coordkit's killed holder keeps the lock until its lease expires, at
// least 2/3 of its 2s TTL.
func TestBenchLockAgainstPGAdvisoryBinary(t *testing.T) {
	t.Parallel()
	db := sqltest.Open(t, sqlfence.Postgres)
	stdout, _ := runBinaryLong(t, "-w", "json", "bench", "lock", "--unsafe-no-fsync", "--against", "pg-advisory", "--dsn", db.DSN,
		"--iterations", "3", "--handoffs", "2", "--duration", "300ms", "--workers", "2", "--crash-handoffs", "1")
	out := string(stdout)
	line := out[strings.Index(out, `{"benchmark"`):]
	var res struct {
		Postgres, Keepalive string
		Rows                []map[string]any
	}
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(line, "\n", 2)[0]), &res), out)
	require.NotEmpty(t, res.Postgres)
	require.NotContains(t, out, db.DSN, "the DSN is not printed")
	var metrics []string
	for _, r := range res.Rows {
		m := r["metric"].(string)
		metrics = append(metrics, m)
		if r["unit"] == "requests" { // etcd requests per uncontended lock+unlock: none for the advisory lock
			require.Nil(t, r["pg_advisory"], m)
			continue
		}
		require.Positive(t, r["pg_advisory"], m)
		if strings.HasPrefix(m, "crash_handoff") {
			require.Nil(t, r["etcd_concurrency"], "no holder process of its own")
			require.GreaterOrEqual(t, r["coordkit"], 2000.0*2/3, "a killed coordkit holder's lease runs out")
		}
	}
	require.Equal(t, []string{"uncontended_p50_ms", "uncontended_kv_requests_per_op", "uncontended_watch_requests_per_op", "handoff_p50_ms", "handoff_p99_ms", "crash_handoff_p50_ms", "crash_handoff_p99_ms", "crash_handoff_max_ms", "contended_2_per_s"}, metrics)
}

// --crash-handoffs alone, without PostgreSQL: coordkit's three crash
// handoff rows (etcd_concurrency null), each at least 2/3 of the 2s TTL
// (how soon after the TTL is a performance figure, not asserted here).
func TestBenchLockCrashHandoffsAloneBinary(t *testing.T) {
	t.Parallel()
	stdout, _ := runBinaryLong(t, "-w", "json", "bench", "lock", "--unsafe-no-fsync",
		"--iterations", "3", "--handoffs", "2", "--duration", "300ms", "--workers", "2", "--crash-handoffs", "2")
	out := string(stdout)
	line := out[strings.Index(out, `{"benchmark"`):]
	var res struct{ Rows []map[string]any }
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(line, "\n", 2)[0]), &res), out)
	crash := 0
	for _, r := range res.Rows {
		if m := r["metric"].(string); strings.HasPrefix(m, "crash_handoff") {
			crash++
			require.Nil(t, r["etcd_concurrency"], m)
			require.GreaterOrEqual(t, r["coordkit"], 2000.0*2/3, m)
		}
	}
	require.Equal(t, 3, crash, "p50, p99 and max")
}
