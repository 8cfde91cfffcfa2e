package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

// processStopped reports whether pid is stopped (state T in /proc).
func processStopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && (f[0] == "T" || f[0] == "t")
}

// coordctl lock NAME -- coordctl sql ... with a frozen holder: A takes the
// lock and freezes (its coordctl lock stopped, so no keepalives; its child
// stopped before its write); etcd expires A's lease, and A's watchdog kills
// A's child; B takes the lock and writes through coordctl sql; A's late
// write, sent with A's token and scope from where the watchdog cannot
// reach (another machine's worker), is rejected with exit 5, and B's write
// is what the table holds.
func TestSQLE2ELockFrozenHolder(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	env := lockEnv(srv.Endpoints()[0])
	bin := coordctlBinary(t)
	sqltest.Each(t, func(t *testing.T, db *sqltest.DB) {
		// Each engine has its own database and lock name: the three wait
		// on a lease expiry each, side by side.
		t.Parallel()
		_, err := db.Exec("CREATE TABLE report (id INTEGER PRIMARY KEY, body VARCHAR(64) NOT NULL)")
		require.NoError(t, err)
		_, err = db.Exec("INSERT INTO report (id, body) VALUES (1, 'initial')")
		require.NoError(t, err)
		dsn := db.DSN
		if db.Dialect == sqlfence.SQLite {
			dsn = db.Name // a plain path
		}
		name := "e2e/sql-" + db.Dialect.String()
		sqlCmd := func(who string) string {
			return fmt.Sprintf(`%s sql --driver %s --dsn '%s' -e "UPDATE report SET body = '%s' WHERE id = 1"`,
				bin, db.Dialect, dsn, who)
		}
		// A prints its pid and token, stops itself before writing, and on
		// SIGCONT writes and prints coordctl sql's exit code.
		a := startCoordctl(t, env, "lock", name, "--ttl", "2s", "--kill-grace", "2s", "--",
			"sh", "-c", `echo "$$ $COORD_FENCING_TOKEN $COORD_FENCING_SCOPE"; kill -STOP $$; `+sqlCmd("A")+`; echo "rc=$?"; while :; do sleep 0.05; done`)
		fields := strings.Fields(a.line(t))
		require.Len(t, fields, 3)
		scopeA := fields[2]
		require.Equal(t, name+"/", scopeA)
		childPid, err := strconv.Atoi(fields[0])
		require.NoError(t, err)
		tokA, err := strconv.ParseInt(fields[1], 10, 64)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return processStopped(childPid) }, 20*time.Second, 10*time.Millisecond)
		// The holder itself freezes: no keepalives.
		require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
		require.Eventually(t, func() bool {
			resp, err := cli.Get(context.Background(), name+"/", clientv3.WithPrefix())
			return err == nil && len(resp.Kvs) == 0
		}, 20*time.Second, 20*time.Millisecond, "etcd never expired the frozen holder's lease")

		// B takes the lock and writes through coordctl sql.
		b := startCoordctl(t, env, "lock", name, "--", "sh", "-c", `echo "$COORD_FENCING_TOKEN"; `+sqlCmd("B"))
		tokB, err := strconv.ParseInt(b.line(t), 10, 64)
		require.NoError(t, err)
		require.Greater(t, tokB, tokA)
		require.Equal(t, exitOK, b.wait(t, 30*time.Second), b.stderr.String())
		require.Contains(t, b.line(t), fmt.Sprintf("ok scope=%s token=%d floor=%d rows_affected=1", scopeA, tokB, tokB))
		require.Equal(t, "B", reportBody(t, db))
		require.Eventually(t, func() bool { return syscall.Kill(childPid, 0) != nil }, 20*time.Second, 10*time.Millisecond,
			"A's watchdog kills A's child once A's lease could expire")

		// A's late write, from a worker the watchdog cannot reach.
		code, out, _ := runBinary(t, env, "sql", "--driver", db.Dialect.String(), "--dsn", dsn, "--token", strconv.FormatInt(tokA, 10),
			"--scope", scopeA, "-e", "UPDATE report SET body = 'A' WHERE id = 1")
		require.Equal(t, exitStale, code, out)
		require.Contains(t, out, fmt.Sprintf("stale token %d for scope %q: floor is %d", tokA, scopeA, tokB))
		require.Equal(t, "B", reportBody(t, db), "the successor's write stays")
		var floor int64
		require.NoError(t, db.QueryRow(db.Rebind("SELECT token FROM coordkit_fence WHERE scope = ?"), scopeA).Scan(&floor))
		require.Equal(t, tokB, floor)

		// The frozen holder wakes, finds its lease gone and exits 4.
		require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
		require.Equal(t, exitLost, a.wait(t, 30*time.Second), a.stderr.String())
	})
}

func reportBody(t *testing.T, db *sqltest.DB) string {
	t.Helper()
	var body string
	require.NoError(t, db.QueryRow("SELECT body FROM report WHERE id = 1").Scan(&body))
	return body
}

// Issue 31 on MariaDB, with the binary: a fence table made beforehand as
// MyISAM is refused (exit 1, naming the table and the engine) before any
// statement runs; a statement that rewrites the fence row is refused by
// its text (exit 2) or, through a view the text does not show, rolled
// back by the re-check before COMMIT (exit 1, not "ok … floor=100"); the
// committed floor stays 100 and token 50 is refused afterwards (exit 5).
func TestSQLE2EFenceTableCannotBeMoved(t *testing.T) {
	t.Parallel()
	db := sqltest.Open(t, sqlfence.MySQL)
	_, err := db.Exec("CREATE TABLE report (id INTEGER PRIMARY KEY, body VARCHAR(64) NOT NULL) ENGINE=InnoDB")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO report (id, body) VALUES (1, 'initial')")
	require.NoError(t, err)
	sql := func(table, token string, stmts ...string) (int, string) {
		args := []string{"sql", "--driver", "mysql", "--dsn", db.DSN, "--table", table, "--scope", "jobs/", "--token", token}
		for _, s := range stmts {
			args = append(args, "-e", s)
		}
		code, out, _ := runBinary(t, nil, args...)
		return code, out
	}

	t.Run("MyISAM table", func(t *testing.T) {
		_, err := db.Exec("CREATE TABLE myisam_fence (scope VARBINARY(512) NOT NULL PRIMARY KEY, token BIGINT NOT NULL, writes BIGINT NOT NULL) ENGINE=MyISAM")
		require.NoError(t, err)
		code, out := sql("myisam_fence", "100", "UPDATE report SET body = 'A' WHERE id = 1")
		require.Equal(t, exitError, code, out)
		require.Contains(t, out, "myisam_fence uses engine MyISAM")
		require.Contains(t, out, "nothing was written")
		require.Equal(t, "initial", reportBody(t, db))
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM myisam_fence").Scan(&n))
		require.Zero(t, n)
	})

	t.Run("fence row rewrite", func(t *testing.T) {
		code, out := sql(sqlfence.DefaultTable, "100", "UPDATE report SET body = 'holder 100' WHERE id = 1")
		require.Equal(t, exitOK, code, out)
		require.Contains(t, out, "ok scope=jobs/ token=100 floor=100 rows_affected=1")

		code, out = sql(sqlfence.DefaultTable, "100", "UPDATE report SET body = 'X' WHERE id = 1", "UPDATE coordkit_fence SET token = 1 WHERE scope = 'jobs/'")
		require.Equal(t, exitUsage, code, out)
		require.Contains(t, out, "names the fence table")

		_, err := db.Exec("CREATE VIEW floors AS SELECT scope, token FROM coordkit_fence")
		require.NoError(t, err)
		code, out = sql(sqlfence.DefaultTable, "100", "UPDATE report SET body = 'X' WHERE id = 1", "UPDATE floors SET token = 1 WHERE scope = 'jobs/'")
		require.Equal(t, exitError, code, out)
		require.NotContains(t, out, "ok scope=")
		require.Contains(t, out, "moved the fence row")
		require.Contains(t, out, "nothing was committed in transactional tables")
		require.Equal(t, "holder 100", reportBody(t, db))
		var floor int64
		require.NoError(t, db.QueryRow("SELECT token FROM coordkit_fence WHERE scope = 'jobs/'").Scan(&floor))
		require.Equal(t, int64(100), floor, "the committed floor")

		code, out = sql(sqlfence.DefaultTable, "50", "UPDATE report SET body = 'late 50' WHERE id = 1")
		require.Equal(t, exitStale, code, out)
		require.Contains(t, out, "floor is 100")
		require.Equal(t, "holder 100", reportBody(t, db))
	})
}
