package scenarios

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
)

// Without PostgreSQL the scenario says so: skipped, naming what to give.
func TestScenarioAdvisoryLockSkipsWithoutPostgres(t *testing.T) {
	reg, err := Default()
	require.NoError(t, err)
	for _, env := range []Env{{TempDir: t.TempDir()}, {TempDir: t.TempDir(), SQLDriver: "sqlite"}} {
		_, err = reg.Run(context.Background(), "advisory-lock", env)
		require.ErrorIs(t, err, ErrSkipped)
		assert.Contains(t, err.Error(), "--driver postgres --dsn")
	}
}

// advisory-lock in a fresh database: every claim holds (they are all
// safety claims), the sequence and tables are dropped.
func TestScenarioAdvisoryLock(t *testing.T) {
	db := sqltest.Open(t, sqlfence.Postgres)
	rep := runScenario(t, "advisory-lock", 60*time.Second, func(e *Env) { e.SQLDriver, e.SQLDSN = db.Driver, db.DSN })
	require.Len(t, rep.Claims, 4)
	require.True(t, rep.Passed)
	a, _ := rep.Metrics.Get("token_a")
	b, _ := rep.Metrics.Get("token_b")
	assert.Greater(t, b, a)
	var left int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM pg_class WHERE relname LIKE 'coordkit_scn_%'").Scan(&left))
	assert.Zero(t, left, "the run drops its tables and sequence")
}
