package scenarios

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A SQLite DSN given as a plain path, as a user types it: the run takes it
// (through sqlfence.NormalizeDSN) and its claims hold there.
func TestFencedSQLOnSQLitePath(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "given.db")
	rep := runScenario(t, "fenced-sql", 60*time.Second, func(e *Env) { e.SQLDriver, e.SQLDSN = "sqlite", path })
	require.True(t, rep.Passed)
	require.FileExists(t, path)
}

// A SQLite DSN under which the check is not safe is refused (ErrInvalid)
// instead of run.
func TestFencedSQLRefusesDeferredSQLite(t *testing.T) {
	t.Parallel()
	reg, err := Default()
	require.NoError(t, err)
	for _, dsn := range []string{"file:" + filepath.Join(t.TempDir(), "x.db") + "?_txlock=deferred", ":memory:"} {
		env := Env{Seed: 1, Scale: ScaleSmall, TempDir: t.TempDir(), StartEtcd: testEtcd(t), SQLDriver: "sqlite", SQLDSN: dsn}
		_, err := reg.Run(context.Background(), "fenced-sql", env)
		require.True(t, errors.Is(err, ErrInvalid), "%s: %v", dsn, err)
	}
}
