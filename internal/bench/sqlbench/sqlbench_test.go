package sqlbench

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
	"github.com/coordkit/coordkit/internal/bench"
)

func TestValidate(t *testing.T) {
	ok := Options{Driver: "sqlite", Iterations: 3, PerWriter: 2, Writers: 2}
	require.NoError(t, ok.Validate())
	for name, mod := range map[string]func(*Options){
		"driver":          func(o *Options) { o.Driver = "oracle" },
		"postgres no dsn": func(o *Options) { o.Driver = "postgres" },
		"iterations":      func(o *Options) { o.Iterations = 0 },
		"per writer":      func(o *Options) { o.PerWriter = 0 },
		"one writer":      func(o *Options) { o.Writers = 1 },
		"many writers":    func(o *Options) { o.Writers = 65 },
		"rounds":          func(o *Options) { o.Rounds = 3 },
		"deferred sqlite": func(o *Options) { o.DSN = "file:x.db?_txlock=deferred" },
		"in-memory":       func(o *Options) { o.DSN = ":memory:" },
		"fence mode":      func(o *Options) { o.Fence = "tx" },
	} {
		t.Run(name, func(t *testing.T) {
			o := ok
			mod(&o)
			assert.ErrorIs(t, o.Validate(), ErrOptions)
			_, err := Run(context.Background(), o)
			assert.ErrorIs(t, err, ErrOptions)
		})
	}
}

// A tiny run on each engine: the rows, positive figures, the tables
// dropped, and (inside Run) every committed transaction counted once.
func TestRunTiny(t *testing.T) {
	for _, fence := range []string{"", FenceDo, FenceDoConn, FenceBoth} {
		t.Run("fence="+fence, func(t *testing.T) {
			t.Parallel() // a database of its own per engine (sqltest.Each)
			testRunTiny(t, fence, false)
		})
	}
	t.Run("fence=both,recheck", func(t *testing.T) {
		t.Parallel()
		testRunTiny(t, FenceBoth, true)
	})
}

func testRunTiny(t *testing.T, fence string, recheck bool) {
	sqltest.Each(t, func(t *testing.T, db *sqltest.DB) {
		o := Options{Driver: db.Dialect.String(), DSN: db.DSN, Iterations: 4, PerWriter: 3, Writers: 3, Fence: fence, Recheck: recheck}
		var progress strings.Builder
		o.Progress = &progress
		res, err := Run(context.Background(), o)
		require.NoError(t, err)
		assert.Equal(t, "sql", res.Benchmark)
		assert.Equal(t, db.Dialect.String(), res.Driver)
		assert.NotEmpty(t, res.Server)
		if fence == "" {
			fence = FenceDo
		}
		assert.Equal(t, fence, res.Fence)
		assert.Equal(t, recheck, res.Recheck)
		var metrics []string
		for _, r := range res.Rows {
			metrics = append(metrics, r.Metric)
			assert.Positive(t, r.Fenced, r.Metric)
			assert.Positive(t, r.Unfenced, r.Metric)
			if fence == FenceBoth {
				assert.Positive(t, r.FencedConn, r.Metric)
			} else {
				assert.Zero(t, r.FencedConn, r.Metric)
			}
		}
		assert.Equal(t, []string{
			"sequential_p50_ms", "sequential_p99_ms", "sequential_per_s",
			"distinct_3_p50_ms", "distinct_3_p99_ms", "distinct_3_per_s",
			"shared_3_p50_ms", "shared_3_p99_ms", "shared_3_per_s",
		}, metrics)
		var out strings.Builder
		require.NoError(t, bench.WriteTable(&out, res.Table()))
		assert.Contains(t, out.String(), "fenced/unfenced")
		if recheck {
			assert.Contains(t, out.String(), "WithRecheck")
		}
		if fence == FenceBoth {
			assert.Contains(t, out.String(), "fenced_conn/unfenced")
		}
		assert.Contains(t, progress.String(), "dropped at the end")

		tables := "SELECT COUNT(*) FROM information_schema.tables WHERE table_name LIKE 'coordkit_bench_%'"
		switch db.Dialect {
		case sqlfence.SQLite:
			tables = "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'coordkit_bench_%'"
		case sqlfence.MySQL:
			tables += " AND table_schema = DATABASE()"
		}
		var n int
		require.NoError(t, db.QueryRow(tables).Scan(&n))
		assert.Zero(t, n, "the run drops its tables")
	})
}

func TestRunSQLiteTempFile(t *testing.T) {
	res, err := Run(context.Background(), Options{Driver: "sqlite", Iterations: 2, PerWriter: 2, Writers: 2, Rounds: 1})
	require.NoError(t, err)
	assert.Len(t, res.Rows, 9)
}

// A SQLite DSN given as a plain path, as a user types it: Run opens it
// with IMMEDIATE transactions (sqlfence.NormalizeDSN), so the shared load's
// concurrent writers wait for the write lock instead of failing.
func TestRunSQLitePlainPath(t *testing.T) {
	path := t.TempDir() + "/plain.db"
	res, err := Run(context.Background(), Options{Driver: "sqlite", DSN: path, Iterations: 2, PerWriter: 3, Writers: 4, Rounds: 1})
	require.NoError(t, err)
	require.Len(t, res.Rows, 9)
	require.FileExists(t, path, "the path given, not a file: URI taken as a name")
}
