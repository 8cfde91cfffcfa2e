package lockbench

import (
	"bytes"
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/redislock/redistest"
	"github.com/coordkit/coordkit/internal/testbin"
)

// A tiny run against the coordination API from Python processes: the
// column and rows are there, positive; not performance. (The crash
// handoff needs a coordctl binary for coordkit's holder: not run here.)
func TestRunAgainstAPI(t *testing.T) {
	t.Parallel()
	py := testbin.Python(t, "json", "python3") // the api_python column runs clients/python; under CI=true a missing one fails
	o := tiny()
	o.Against, o.Python = []string{AgainstAPI}, py
	res, err := Run(context.Background(), o)
	require.NoError(t, err)
	require.True(t, res.API)
	for _, r := range res.Rows {
		require.NotNil(t, r.APIPython, r.Metric)
		if r.Unit == "requests" {
			require.True(t, math.IsNaN(*r.APIPython), "the agent's requests are not the client's")
			continue
		}
		require.Positive(t, *r.APIPython, r.Metric)
	}
	tab := res.Table()
	require.Equal(t, []string{"coordkit", "etcd_concurrency", "api_python"}, tab.Columns)
	var out bytes.Buffer
	require.NoError(t, bench.WriteTable(&out, tab))
	require.Contains(t, out.String(), "coordkit better than api_python by")
}

// A tiny run against redis-py's Lock and pg_advisory_lock through psycopg2
// from Python processes: the columns and rows are there, positive where
// measured, the Redis keys gone; not performance. (The crash handoff needs
// a coordctl binary for coordkit's holder: not run here.)
func TestRunAgainstPythonLocks(t *testing.T) {
	t.Parallel()
	py := testbin.Python(t, "redis, psycopg2", "python3-redis python3-psycopg2")
	c, ks := redistest.Client(t, "bench-lock-py")
	db := sqltest.Open(t, sqlfence.Postgres)
	o := tiny()
	o.Against, o.Python, o.Redis, o.RedisKeyspace, o.DSN = []string{AgainstRedisPy, AgainstPsycopg}, py, c.Options().Addr, ks, db.DSN
	// redis-py's Lock polls every 0.1 s: a contended step of tiny's 300 ms
	// counted no acquisition at load 10. Two seconds count some.
	o.Duration = 2 * time.Second
	// One contended step, not tiny's two: each is Duration per
	// implementation (the test was 30 s alone with two).
	o.Workers = []int{2}
	res, err := Run(context.Background(), o)
	require.NoError(t, err)
	for _, r := range res.Rows {
		require.NotNil(t, r.RedisPy, r.Metric)
		require.NotNil(t, r.Psycopg, r.Metric)
		require.Nil(t, r.APIPython, r.Metric)
		if r.Unit == "requests" {
			require.True(t, math.IsNaN(*r.RedisPy) && math.IsNaN(*r.Psycopg), r.Metric)
			continue
		}
		require.Positive(t, *r.RedisPy, r.Metric)
		require.Positive(t, *r.Psycopg, r.Metric)
	}
	require.Equal(t, []string{"coordkit", "etcd_concurrency", "redis_py", "psycopg"}, res.Table().Columns)
	keys, err := ks.Keys(context.Background(), c)
	require.NoError(t, err)
	require.Empty(t, keys)
}
