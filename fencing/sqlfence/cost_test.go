package sqlfence_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
)

// BenchmarkTransactionCPU measures what one small transaction (one UPDATE
// of a business row, the token equal to the floor) costs in CPU time, not
// wall time: this process's (getrusage: the client, database/sql and the
// driver) and the server's for the one connection (PostgreSQL's backend
// process, MariaDB's connection thread, read from /proc: only when the
// server runs on this machine, else 0). CPU time does not depend on how
// loaded the machine is the way latency does, so it tells what each
// statement and round trip of the fence costs on a shared machine where
// bench sql's latencies are noise. Each transaction of each side counts
// as one op (ns/op is the wall time of all five sides' transactions):
//
//	go test -run '^$' -bench TransactionCPU -benchtime 3000x ./fencing/sqlfence/
//
// MySQL runs with multiStatements=true (DoConn's BEGIN with the check).
func BenchmarkTransactionCPU(b *testing.B) {
	for _, d := range []sqlfence.Dialect{sqlfence.Postgres, sqlfence.MySQL} {
		b.Run(d.String(), func(b *testing.B) { benchmarkTransactionCPU(b, d) })
	}
}

// costDB is a fresh database of dialect d with the business table
// cost_rows (row 1), opened as a pool of one connection (one server
// process or thread to read), MySQL with multiStatements=true (DoConn's
// BEGIN with the check); upd is the UPDATE of row 1 in d's placeholders.
func costDB(b *testing.B, d sqlfence.Dialect) (pdb *sql.DB, upd string) {
	db := sqltest.Open(b, d)
	params := ""
	if d == sqlfence.MySQL {
		params = "?multiStatements=true"
	}
	pdb, err := sql.Open(db.Driver, db.DSN+params)
	require.NoError(b, err)
	b.Cleanup(func() { _ = pdb.Close() })
	pdb.SetMaxOpenConns(1)
	pdb.SetMaxIdleConns(1)
	_, err = pdb.Exec("CREATE TABLE cost_rows (id INTEGER NOT NULL PRIMARY KEY, n BIGINT NOT NULL)")
	require.NoError(b, err)
	_, err = pdb.Exec("INSERT INTO cost_rows VALUES (1, 0)")
	require.NoError(b, err)
	return pdb, db.Rebind("UPDATE cost_rows SET n = n + 1 WHERE id = ?")
}

func benchmarkTransactionCPU(b *testing.B, d sqlfence.Dialect) {
	ctx := context.Background()
	pdb, upd := costDB(b, d)
	server := serverTask(b, pdb, d)
	write := func(q sqlfence.Querier) error { _, err := q.ExecContext(ctx, upd, 1); return err }
	plain, err := sqlfence.New(pdb, d)
	require.NoError(b, err)
	recheck, err := sqlfence.New(pdb, d, sqlfence.WithRecheck())
	require.NoError(b, err)
	require.NoError(b, plain.Fence(ctx, "s", 5))
	sides := []side{
		{"unfenced", func() error {
			tx, err := pdb.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if err := write(tx); err != nil {
				_ = tx.Rollback()
				return err
			}
			return tx.Commit()
		}},
		{"Do", func() error { return plain.Do(ctx, "s", 5, func(tx *sql.Tx) error { return write(tx) }) }},
		{"DoConn", func() error { return plain.DoConn(ctx, "s", 5, write) }},
		{"Do_recheck", func() error { return recheck.Do(ctx, "s", 5, func(tx *sql.Tx) error { return write(tx) }) }},
		{"DoConn_recheck", func() error { return recheck.DoConn(ctx, "s", 5, write) }},
	}
	client, srv, _ := measureSides(b, sides, server)
	for i, s := range sides {
		b.ReportMetric(perOp(b, client[i]), s.name+"-client-µs/op")
		b.ReportMetric(perOp(b, srv[i]), s.name+"-server-µs/op")
	}
}

// perOp is d spread over the b.N transactions of a side, in microseconds.
func perOp(b *testing.B, d time.Duration) float64 {
	return float64(d.Nanoseconds()) / 1e3 / float64(b.N)
}

// side is one kind of transaction a cost benchmark runs.
type side struct {
	name string
	tx   func() error
}

// measureSides runs b.N transactions of each side after 20 to warm up
// (prepared statements, the scope's hint), the sides taking turns in
// rounds, each going first in turn, so that a change in the machine's
// load falls on all of them. It returns, per side, this process's CPU
// time, the server task's (taskCPU) and every transaction's latency.
func measureSides(b *testing.B, sides []side, server string) (client, srv []time.Duration, lat [][]time.Duration) {
	for _, s := range sides {
		for range 20 {
			require.NoError(b, s.tx(), s.name)
		}
	}
	client = make([]time.Duration, len(sides))
	srv = make([]time.Duration, len(sides))
	lat = make([][]time.Duration, len(sides))
	const rounds = 10
	b.ResetTimer()
	for round := range rounds {
		n := b.N / rounds
		if round < b.N%rounds {
			n++
		}
		for k := range sides {
			i := (k + round) % len(sides)
			c0, s0 := selfCPU(), taskCPU(server)
			for range n {
				t0 := time.Now()
				if err := sides[i].tx(); err != nil {
					b.Fatal(err)
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
			client[i] += selfCPU() - c0
			srv[i] += taskCPU(server) - s0
		}
	}
	b.StopTimer()
	return client, srv, lat
}

// BenchmarkCheckCost splits what DoConn adds to an unfenced transaction
// (one UPDATE, the token equal to the floor) into steps, each adding one
// thing to the step before, on one connection: the server's CPU time per
// transaction (as BenchmarkTransactionCPU) and the median latency:
//
//	begin_on_conn     BEGIN, the UPDATE and COMMIT on a *sql.Conn, no fence
//	plus_statement    BEGIN sent with a statement that reads no table (SELECT 1)
//	plus_check        that statement is the shared check instead: a locking
//	                  read of the scope's row in the fence table, as DoConn
//	                  sends it (PostgreSQL an EXECUTE of a prepared SELECT
//	                  ... FOR SHARE; MySQL a literal ... LOCK IN SHARE MODE)
//	doconn            DoConn itself: the same requests, and its bookkeeping
//
// so that plus_check - plus_statement is what reading the fence table
// costs the server, whatever the statement's form.
//
//	go test -run '^$' -bench CheckCost -benchtime 3000x ./fencing/sqlfence/
func BenchmarkCheckCost(b *testing.B) {
	for _, d := range []sqlfence.Dialect{sqlfence.Postgres, sqlfence.MySQL} {
		b.Run(d.String(), func(b *testing.B) { benchmarkCheckCost(b, d) })
	}
}

func benchmarkCheckCost(b *testing.B, d sqlfence.Dialect) {
	ctx := context.Background()
	pdb, upd := costDB(b, d)
	begin := "BEGIN"
	// PostgreSQL: an EXECUTE of a statement prepared on the connection,
	// as DoConn's (planned once per connection, not per transaction).
	check := "EXECUTE cost_share(5, E's')"
	if d == sqlfence.MySQL {
		begin = "START TRANSACTION"
		check = "SELECT COUNT(*) FROM coordkit_fence WHERE scope = X'73' AND token = 5 LOCK IN SHARE MODE"
	}
	f, err := sqlfence.New(pdb, d)
	require.NoError(b, err)
	require.Equal(b, "coordkit_fence", f.Table())
	require.NoError(b, f.Fence(ctx, "s", 5))
	if d == sqlfence.Postgres { // on the pool's one connection
		_, err = pdb.Exec("PREPARE cost_share(bigint, text) AS SELECT 1 FROM coordkit_fence WHERE scope = $2 AND token = $1 FOR SHARE")
		require.NoError(b, err)
	}
	server := serverTask(b, pdb, d)
	write := func(q sqlfence.Querier) error { _, err := q.ExecContext(ctx, upd, 1); return err }
	// onConn runs first (BEGIN, alone or with a statement that must find
	// one row), the UPDATE and COMMIT on a connection of its own, as
	// DoConn sends them.
	onConn := func(first string, reads bool) func() error {
		return func() error {
			c, err := pdb.Conn(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			var n int64
			switch {
			case reads && d == sqlfence.MySQL:
				err = c.QueryRowContext(ctx, first).Scan(&n)
			case reads:
				// pgx sends a query without arguments in the simple
				// protocol (several statements in one message) from Exec
				// only; the tag of SELECT is the rows it returned.
				var res sql.Result
				if res, err = c.ExecContext(ctx, first); err == nil {
					n, err = res.RowsAffected()
				}
			default:
				_, err = c.ExecContext(ctx, first)
				n = 1
			}
			if err != nil {
				return err
			}
			if n != 1 {
				return fmt.Errorf("%q found %d (rows, or the count it read), want 1", first, n)
			}
			if err := write(c); err != nil {
				return err
			}
			_, err = c.ExecContext(ctx, "COMMIT")
			return err
		}
	}
	sides := []side{
		{"begin_on_conn", onConn(begin, false)},
		{"plus_statement", onConn(begin+"; SELECT 1", true)},
		{"plus_check", onConn(begin+"; "+check, true)},
		{"doconn", func() error { return f.DoConn(ctx, "s", 5, write) }},
	}
	_, srv, lat := measureSides(b, sides, server)
	for i, s := range sides {
		b.ReportMetric(perOp(b, srv[i]), s.name+"-server-µs/op")
		b.ReportMetric(float64(cluster.Percentile(lat[i], 0.5).Nanoseconds())/1e3, s.name+"-p50-µs")
	}
}

// serverTask is the /proc path of the server process (PostgreSQL) or
// thread (MariaDB) serving pdb's one connection; "" when it is not on
// this machine.
func serverTask(b *testing.B, pdb *sql.DB, d sqlfence.Dialect) string {
	q := "SELECT pg_backend_pid()"
	if d == sqlfence.MySQL {
		q = "SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()"
	}
	var id int
	if err := pdb.QueryRow(q).Scan(&id); err != nil {
		b.Logf("no server CPU: %v", err)
		return ""
	}
	path := fmt.Sprintf("/proc/%d/stat", id)
	if _, err := os.Stat(path); err != nil {
		b.Logf("no server CPU: the server is not on this machine (%v)", err)
		return ""
	}
	return path
}

// taskCPU is the user and system time of a /proc stat file, 0 without one.
func taskCPU(path string) time.Duration {
	if path == "" {
		return 0
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var user, sys int64
	_, _ = fmt.Sscan(f[11], &user) // utime, stime: fields 14 and 15, in clock ticks
	_, _ = fmt.Sscan(f[12], &sys)
	return time.Duration(user+sys) * time.Second / 100 // USER_HZ
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
