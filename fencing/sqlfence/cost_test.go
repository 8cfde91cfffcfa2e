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

func benchmarkTransactionCPU(b *testing.B, d sqlfence.Dialect) {
	db := sqltest.Open(b, d)
	ctx := context.Background()
	params := ""
	if d == sqlfence.MySQL {
		params = "?multiStatements=true"
	}
	pdb, err := sql.Open(db.Driver, db.DSN+params)
	require.NoError(b, err)
	b.Cleanup(func() { _ = pdb.Close() })
	pdb.SetMaxOpenConns(1) // one connection: one server process or thread to read
	pdb.SetMaxIdleConns(1)
	_, err = pdb.Exec("CREATE TABLE cost_rows (id INTEGER NOT NULL PRIMARY KEY, n BIGINT NOT NULL)")
	require.NoError(b, err)
	_, err = pdb.Exec("INSERT INTO cost_rows VALUES (1, 0)")
	require.NoError(b, err)
	server := serverTask(b, pdb, d)
	upd := db.Rebind("UPDATE cost_rows SET n = n + 1 WHERE id = ?")
	write := func(q sqlfence.Querier) error { _, err := q.ExecContext(ctx, upd, 1); return err }
	plain, err := sqlfence.New(pdb, d)
	require.NoError(b, err)
	recheck, err := sqlfence.New(pdb, d, sqlfence.WithRecheck())
	require.NoError(b, err)
	require.NoError(b, plain.Fence(ctx, "s", 5))
	sides := []struct {
		name string
		tx   func() error
	}{
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
	for _, s := range sides {
		for range 20 { // warm: prepared statements, the scope's hint
			require.NoError(b, s.tx())
		}
	}
	// The sides take turns in rounds, each going first in turn, so that a
	// change in the machine's load falls on all of them.
	client := make([]time.Duration, len(sides))
	srv := make([]time.Duration, len(sides))
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
				if err := sides[i].tx(); err != nil {
					b.Fatal(err)
				}
			}
			client[i] += selfCPU() - c0
			srv[i] += taskCPU(server) - s0
		}
	}
	b.StopTimer()
	per := func(x time.Duration) float64 { return float64(x.Nanoseconds()) / 1e3 / float64(b.N) }
	for i, s := range sides {
		b.ReportMetric(per(client[i]), s.name+"-client-µs/op")
		b.ReportMetric(per(srv[i]), s.name+"-server-µs/op")
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
