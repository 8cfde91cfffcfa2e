package lockbench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/nettest"
	"github.com/coordkit/coordkit/internal/pglock"
)

// A tiny run against the advisory lock in a fresh database: the column and
// rows are there, positive; not performance. (The crash handoff needs a
// coordctl binary: internal/cli's test runs it.)
func TestRunAgainstPGAdvisory(t *testing.T) {
	t.Parallel() // each run starts an etcd of its own
	db := sqltest.Open(t, sqlfence.Postgres)
	o := tiny()
	o.Against, o.DSN = []string{AgainstPG}, db.DSN
	res, err := Run(context.Background(), o)
	require.NoError(t, err)
	require.NotEmpty(t, res.Postgres)
	require.Equal(t, pglock.DefaultKeepalive.String(), res.Keepalive)
	var metrics []string
	for _, r := range res.Rows {
		metrics = append(metrics, r.Metric)
		require.NotNil(t, r.PGAdvisory, r.Metric)
		require.Nil(t, r.Redsync)
		if r.Unit == "requests" {
			checkRequests(t, r)
			require.True(t, math.IsNaN(*r.PGAdvisory), "no etcd requests to count for the advisory lock")
			continue
		}
		require.Positive(t, *r.PGAdvisory, r.Metric)
	}
	require.Equal(t, []string{"uncontended_p50_ms", "uncontended_kv_requests_per_op", "uncontended_watch_requests_per_op", "handoff_p50_ms", "handoff_p99_ms", "contended_2_per_s", "contended_3_per_s"}, metrics)
	tab := res.Table()
	require.Equal(t, []string{"coordkit", "etcd_concurrency", "pg_advisory"}, tab.Columns)
	var out bytes.Buffer
	require.NoError(t, bench.WriteTable(&out, tab))
	require.Contains(t, out.String(), "coordkit better than pg_advisory by")
	require.Contains(t, out.String(), "tcp_keepalives_idle=2s")
}

func TestRunPGUnreachable(t *testing.T) {
	addr := nettest.ClosedAddr(t)
	o := tiny()
	o.Against, o.DSN = []string{AgainstPG}, "postgres://root@"+addr+"/test?sslmode=disable&connect_timeout=1"
	var progress bytes.Buffer
	o.Progress = &progress
	_, err := Run(context.Background(), o)
	require.ErrorIs(t, err, pglock.ErrUnreachable)
	require.Contains(t, err.Error(), addr)
	require.NotContains(t, progress.String(), "starting embedded etcd", "fails before starting etcd")
}

// A value not measured is null in JSON, not an error.
func TestRowJSONNotMeasured(t *testing.T) {
	pg := 1.5
	b, err := json.Marshal(Row{Metric: "crash_handoff_p50_ms", Coordkit: 2000, EtcdConcurrency: math.NaN(), PGAdvisory: &pg, Unit: "ms"})
	require.NoError(t, err)
	require.JSONEq(t, `{"metric":"crash_handoff_p50_ms","coordkit":2000,"etcd_concurrency":null,"pg_advisory":1.5,"unit":"ms"}`, string(b))
}
