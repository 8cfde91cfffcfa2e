package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newFence(t *testing.T, db *sqltest.DB, opts ...sqlfence.Option) *sqlfence.Fence {
	t.Helper()
	f, err := sqlfence.New(db.DB, db.Dialect, opts...)
	require.NoError(t, err)
	return f
}

// createLog creates the business table: one row per admitted write. Its
// ids are in token order: a writer holds the fence row's lock (shared for
// a token equal to the floor, exclusive for a raise) from the check to the
// commit, so a raise's write comes after every write of the tokens below
// it, and none of theirs after it.
func createLog(t *testing.T, db *sqltest.DB) {
	t.Helper()
	var ddl string
	switch db.Dialect {
	case sqlfence.Postgres:
		ddl = "CREATE TABLE biz (id BIGSERIAL PRIMARY KEY, token BIGINT NOT NULL, attempt BIGINT NOT NULL)"
	case sqlfence.MySQL:
		ddl = "CREATE TABLE biz (id BIGINT AUTO_INCREMENT PRIMARY KEY, token BIGINT NOT NULL, attempt BIGINT NOT NULL) ENGINE=InnoDB"
	default:
		ddl = "CREATE TABLE biz (id INTEGER PRIMARY KEY AUTOINCREMENT, token INTEGER NOT NULL, attempt INTEGER NOT NULL)"
	}
	_, err := db.Exec(ddl)
	require.NoError(t, err)
}

func appendLog(ctx context.Context, db *sqltest.DB, tx sqlfence.Querier, token fencing.Token, attempt int) error {
	_, err := tx.ExecContext(ctx, db.Rebind("INSERT INTO biz (token, attempt) VALUES (?, ?)"), int64(token), attempt)
	return err
}

type logRow struct{ token, attempt int64 }

func readLog(t *testing.T, db *sqltest.DB) []logRow {
	t.Helper()
	rows, err := db.Query("SELECT token, attempt FROM biz ORDER BY id")
	require.NoError(t, err)
	defer rows.Close()
	var out []logRow
	for rows.Next() {
		var r logRow
		require.NoError(t, rows.Scan(&r.token, &r.attempt))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// modes are the two ways to run a fenced transaction, whose contract the
// tests check alike: Do (database/sql's Tx) and DoConn (BEGIN sent with
// the check, on a connection).
var modes = []string{"Do", "DoConn"}

// serverModes are the engines with a wire and row locks, each in both modes.
var serverModes = []struct {
	d    sqlfence.Dialect
	mode string
}{{sqlfence.Postgres, "Do"}, {sqlfence.MySQL, "Do"}, {sqlfence.Postgres, "DoConn"}, {sqlfence.MySQL, "DoConn"}}

type doFunc func(ctx context.Context, scope string, token fencing.Token, fn func(tx sqlfence.Querier) error) error

func doWith(f *sqlfence.Fence, mode string) doFunc {
	if mode == "DoConn" {
		return f.DoConn
	}
	return func(ctx context.Context, scope string, token fencing.Token, fn func(tx sqlfence.Querier) error) error {
		return f.Do(ctx, scope, token, func(tx *sql.Tx) error { return fn(tx) })
	}
}

// eachMode runs fn per mode and engine, each with a fresh database.
func eachMode(t *testing.T, fn func(t *testing.T, db *sqltest.DB, mode string)) {
	for _, m := range modes {
		t.Run(m, func(t *testing.T) {
			sqltest.Each(t, func(t *testing.T, db *sqltest.DB) { fn(t, db, m) })
		})
	}
}

func writes(t *testing.T, db *sqltest.DB, scope string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.QueryRow(db.Rebind("SELECT writes FROM coordkit_fence WHERE scope = ?"), scope).Scan(&n))
	return n
}

func requireStale(t *testing.T, err error, scope string, token, floor fencing.Token) {
	t.Helper()
	require.ErrorIs(t, err, fencing.ErrStale)
	var se *fencing.StaleError
	require.ErrorAs(t, err, &se)
	require.Equal(t, fencing.StaleError{Scope: scope, Token: token, Floor: floor}, *se)
}

func TestNewRejects(t *testing.T) {
	db := sqltest.Open(t, sqlfence.SQLite)
	for _, tc := range []struct {
		name    string
		db      *sql.DB
		dialect sqlfence.Dialect
		opts    []sqlfence.Option
		want    error
	}{
		{"nil db", nil, sqlfence.SQLite, nil, sqlfence.ErrNilDB},
		{"zero dialect", db.DB, 0, nil, sqlfence.ErrUnknownDialect},
		{"unknown dialect", db.DB, 42, nil, sqlfence.ErrUnknownDialect},
		{"empty table", db.DB, sqlfence.SQLite, []sqlfence.Option{sqlfence.WithTable("")}, sqlfence.ErrInvalidTable},
		{"table with space", db.DB, sqlfence.SQLite, []sqlfence.Option{sqlfence.WithTable("a b")}, sqlfence.ErrInvalidTable},
		{"table with injection", db.DB, sqlfence.SQLite, []sqlfence.Option{sqlfence.WithTable("t; DROP TABLE x")}, sqlfence.ErrInvalidTable},
		{"table starting with digit", db.DB, sqlfence.SQLite, []sqlfence.Option{sqlfence.WithTable("1t")}, sqlfence.ErrInvalidTable},
		{"table too long", db.DB, sqlfence.SQLite, []sqlfence.Option{sqlfence.WithTable(strings.Repeat("t", 64))}, sqlfence.ErrInvalidTable},
		{"quoted table", db.DB, sqlfence.SQLite, []sqlfence.Option{sqlfence.WithTable(`"t"`)}, sqlfence.ErrInvalidTable},
		{"read-only tx", db.DB, sqlfence.SQLite, []sqlfence.Option{sqlfence.WithTxOptions(&sql.TxOptions{ReadOnly: true})}, sqlfence.ErrReadOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := sqlfence.New(tc.db, tc.dialect, tc.opts...)
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, f)
		})
	}
	for _, ok := range []string{"fence", "my_fence_2", "_f", "public.fence", strings.Repeat("t", 63)} {
		_, err := sqlfence.New(db.DB, sqlfence.SQLite, sqlfence.WithTable(ok))
		require.NoError(t, err, ok)
	}
}

func TestParseDialect(t *testing.T) {
	for in, want := range map[string]sqlfence.Dialect{
		"postgres": sqlfence.Postgres, "postgresql": sqlfence.Postgres, "pgx": sqlfence.Postgres,
		"mysql": sqlfence.MySQL, "MariaDB": sqlfence.MySQL, "sqlite": sqlfence.SQLite, "sqlite3": sqlfence.SQLite,
	} {
		got, err := sqlfence.ParseDialect(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := sqlfence.ParseDialect("oracle")
	require.ErrorIs(t, err, sqlfence.ErrUnknownDialect)
}

func TestSQLiteDSN(t *testing.T) {
	require.Equal(t, "file:/tmp/a%3fb%23c%25d.db?_txlock=immediate&_pragma=busy_timeout(10000)",
		sqlfence.SQLiteDSN("/tmp/a?b#c%d.db"))
	// A path with the characters escaped opens the file of that name.
	path := t.TempDir() + "/odd ?#% name.db"
	db, err := sql.Open("sqlite", sqlfence.SQLiteDSN(path))
	require.NoError(t, err)
	defer db.Close()
	f, err := sqlfence.New(db, sqlfence.SQLite)
	require.NoError(t, err)
	require.NoError(t, f.Fence(testCtx(t), "s", 3))
	require.FileExists(t, path)
}

// The basic contract on every engine: admit, raise, refuse below the floor,
// admit an equal token again (MySQL counts changed rows, hence writes+1).
func TestDoAdmitsAndRefuses(t *testing.T) {
	eachMode(t, func(t *testing.T, db *sqltest.DB, mode string) {
		ctx := testCtx(t)
		createLog(t, db)
		f := newFence(t, db)
		run := doWith(f, mode)

		floor, err := f.Floor(ctx, "jobs")
		require.NoError(t, err)
		require.Zero(t, floor)

		do := func(token fencing.Token, attempt int) error {
			return run(ctx, "jobs", token, func(tx sqlfence.Querier) error { return appendLog(ctx, db, tx, token, attempt) })
		}
		require.NoError(t, do(5, 1))
		require.NoError(t, do(5, 2), "the same holder writes again")
		require.NoError(t, do(7, 3))
		requireStale(t, do(6, 4), "jobs", 6, 7)
		requireStale(t, do(5, 5), "jobs", 5, 7)
		require.NoError(t, do(7, 6))

		floor, err = f.Floor(ctx, "jobs")
		require.NoError(t, err)
		require.Equal(t, fencing.Token(7), floor)
		require.Equal(t, []logRow{{5, 1}, {5, 2}, {7, 3}, {7, 6}}, readLog(t, db))
		// The row is written only when the floor moves (to 5, then to 7):
		// a token equal to the floor takes the shared check.
		require.Equal(t, int64(2), writes(t, db, "jobs"))

		// Scopes are independent, and compared byte for byte.
		require.NoError(t, f.Fence(ctx, "other", 1))
		require.NoError(t, f.Fence(ctx, "Jobs", 100))
		require.NoError(t, f.Fence(ctx, "jobs ", 100))
		floor, err = f.Floor(ctx, "jobs")
		require.NoError(t, err)
		require.Equal(t, fencing.Token(7), floor)
	})
}

func TestFenceRaisesFloorWithoutWrites(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqltest.DB) {
		ctx := testCtx(t)
		f := newFence(t, db, sqlfence.WithTable("my_fence"))
		require.NoError(t, f.Fence(ctx, "s", 10))
		require.NoError(t, f.Fence(ctx, "s", 10))
		requireStale(t, f.Fence(ctx, "s", 9), "s", 9, 10)
		requireStale(t, f.Do(ctx, "s", 3, func(*sql.Tx) error {
			t.Error("fn called for a stale token")
			return nil
		}), "s", 3, 10)
		floor, err := f.Floor(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, fencing.Token(10), floor)
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM my_fence").Scan(&n))
		require.Equal(t, 1, n)

		// A second Fence on the same table (another process) sees the floor.
		g := newFence(t, db, sqlfence.WithTable("my_fence"))
		requireStale(t, g.Fence(ctx, "s", 2), "s", 2, 10)
	})
}

func TestBadInput(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqltest.DB) {
		ctx := testCtx(t)
		f := newFence(t, db)
		never := func(*sql.Tx) error { t.Error("fn called"); return nil }
		for _, tc := range []struct {
			name  string
			scope string
			token fencing.Token
			want  error
		}{
			{"token 0", "s", 0, fencing.ErrInvalidToken},
			{"token above MaxToken (negative as int64)", "s", fencing.MaxToken + 1, fencing.ErrInvalidToken},
			{"token max uint64", "s", ^fencing.Token(0), fencing.ErrInvalidToken},
			{"empty scope", "", 1, fencing.ErrInvalidScope},
			{"scope longer than the column", strings.Repeat("s", fencing.MaxScopeLen+1), 1, fencing.ErrInvalidScope},
			{"control character", "a\nb", 1, fencing.ErrInvalidScope},
		} {
			t.Run(tc.name, func(t *testing.T) {
				require.ErrorIs(t, f.Do(ctx, tc.scope, tc.token, never), tc.want)
				require.ErrorIs(t, f.Fence(ctx, tc.scope, tc.token), tc.want)
			})
		}
		_, err := f.Floor(ctx, "")
		require.ErrorIs(t, err, fencing.ErrInvalidScope)

		// The longest scope, in multi-byte characters, fits the column.
		long := strings.Repeat("é", fencing.MaxScopeLen/2)
		require.Len(t, long, fencing.MaxScopeLen)
		require.NoError(t, f.Fence(ctx, long, fencing.MaxToken))
		floor, err := f.Floor(ctx, long)
		require.NoError(t, err)
		require.Equal(t, fencing.MaxToken, floor)
	})
}

// A statement that fails inside fn, or fn's own error, or a panic, rolls
// everything back: the floor does not move and nothing is written.
func TestFailureRollsBack(t *testing.T) {
	eachMode(t, func(t *testing.T, db *sqltest.DB, mode string) {
		ctx := testCtx(t)
		createLog(t, db)
		f := newFence(t, db)
		run := doWith(f, mode)
		require.NoError(t, f.Fence(ctx, "s", 3))

		err := run(ctx, "s", 8, func(tx sqlfence.Querier) error {
			if err := appendLog(ctx, db, tx, 8, 1); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO no_such_table VALUES (1)")
			return err
		})
		require.Error(t, err)
		require.NotErrorIs(t, err, fencing.ErrStale)

		boom := errors.New("boom")
		err = run(ctx, "s", 9, func(tx sqlfence.Querier) error {
			if err := appendLog(ctx, db, tx, 9, 2); err != nil {
				return err
			}
			return boom
		})
		require.ErrorIs(t, err, boom)

		require.PanicsWithValue(t, "fn panics", func() {
			_ = run(ctx, "s", 10, func(tx sqlfence.Querier) error {
				if err := appendLog(ctx, db, tx, 10, 3); err != nil {
					t.Error(err)
				}
				panic("fn panics")
			})
		})

		floor, err := f.Floor(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, fencing.Token(3), floor)
		require.Empty(t, readLog(t, db))
		require.Equal(t, int64(1), writes(t, db, "s"))

		// The fence still works afterwards (no connection left in a bad state).
		require.NoError(t, run(ctx, "s", 4, func(tx sqlfence.Querier) error { return appendLog(ctx, db, tx, 4, 4) }))
		require.Equal(t, []logRow{{4, 4}}, readLog(t, db))
	})
}

func TestCancelledContext(t *testing.T) {
	db := sqltest.Open(t, sqlfence.SQLite)
	f := newFence(t, db)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, f.Fence(ctx, "s", 1), context.Canceled)
}

type result struct {
	attempt int
	token   fencing.Token
	err     error
}

// Many writers with interleaved tokens on one scope, starting before the
// scope has a row: the committed writes, in commit order, never go down in
// token; a writer told "stale" committed nothing; a writer told "ok" is in
// the table exactly once.
func TestConcurrentWriters(t *testing.T) {
	eachMode(t, func(t *testing.T, db *sqltest.DB, mode string) {
		ctx := testCtx(t)
		createLog(t, db)
		const writers, rounds = 12, 8
		start := make(chan struct{})
		results := make(chan result, writers*rounds)
		var wg sync.WaitGroup
		// All writers finish a round before any starts the next, so that
		// tokens of neighbouring writers interleave instead of one fast
		// writer running ahead of the others.
		round := make([]sync.WaitGroup, rounds)
		for r := range round {
			round[r].Add(writers)
		}
		for w := range writers {
			f := newFence(t, db) // one Fence each: also races the table's creation
			run := doWith(f, mode)
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 1))
				<-start
				for r := range rounds {
					attempt := w*rounds + r + 1
					// Tokens climb with the round, with overlap between
					// writers, so some are stale and most are not.
					token := fencing.Token(r*4 + rng.IntN(8) + 1)
					err := run(ctx, "shared", token, func(tx sqlfence.Querier) error {
						return appendLog(ctx, db, tx, token, attempt)
					})
					results <- result{attempt, token, err}
					round[r].Done()
					round[r].Wait()
				}
			}()
		}
		close(start)
		wg.Wait()
		close(results)

		ok, staleN := map[int64]bool{}, 0
		var maxOK fencing.Token
		for r := range results {
			switch {
			case r.err == nil:
				ok[int64(r.attempt)] = true
				maxOK = max(maxOK, r.token)
			case errors.Is(r.err, fencing.ErrStale):
				staleN++
				var se *fencing.StaleError
				require.ErrorAs(t, r.err, &se)
				require.Greater(t, se.Floor, r.token)
				require.Equal(t, r.token, se.Token)
				ok[int64(r.attempt)] = false
			default:
				t.Fatalf("attempt %d token %d: %v", r.attempt, r.token, r.err)
			}
		}
		log := readLog(t, db)
		seen := map[int64]bool{}
		for i, row := range log {
			if i > 0 {
				require.GreaterOrEqual(t, row.token, log[i-1].token, "commit %d went down: %v", i, log)
			}
			require.True(t, ok[row.attempt], "attempt %d is in the table but was not told ok", row.attempt)
			require.False(t, seen[row.attempt], "attempt %d twice", row.attempt)
			seen[row.attempt] = true
		}
		for a, good := range ok {
			require.Equal(t, good, seen[a], "attempt %d: told ok=%v, in table=%v", a, good, seen[a])
		}
		require.Len(t, log, writers*rounds-staleN)
		require.NotEmpty(t, log)
		t.Logf("%d committed, %d stale", len(log), staleN)

		f := newFence(t, db)
		floor, err := f.Floor(ctx, "shared")
		require.NoError(t, err)
		require.Equal(t, maxOK, floor)
		require.Equal(t, fencing.Token(log[len(log)-1].token), floor)
		// Every token that committed was first written by an exclusive
		// check (the shared one admits only the floor); equal tokens after
		// it mostly were not.
		distinct := map[int64]bool{}
		for _, row := range log {
			distinct[row.token] = true
		}
		require.GreaterOrEqual(t, writes(t, db, "shared"), int64(len(distinct)))
		require.LessOrEqual(t, writes(t, db, "shared"), int64(len(log)))
		if floor > 1 {
			requireStale(t, f.Fence(ctx, "shared", floor-1), "shared", floor-1, floor)
		}
	})
}

// lockWaiters counts this database's sessions waiting for a row lock.
func lockWaiters(t *testing.T, db *sqltest.DB) int {
	t.Helper()
	var q string
	switch db.Dialect {
	case sqlfence.Postgres:
		q = "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
	case sqlfence.MySQL:
		// MariaDB does not list a transaction waiting for its first row
		// lock in INNODB_TRX or INNODB_LOCK_WAITS; the process list shows
		// the check statement in progress, which while the holder's
		// transaction is open means it waits for the row.
		q = `SELECT COUNT(*) FROM information_schema.PROCESSLIST
		     WHERE DB = DATABASE() AND STATE = 'Updating' AND INFO LIKE 'UPDATE coordkit_fence %'`
	}
	var n int
	require.NoError(t, db.QueryRow(q).Scan(&n))
	return n
}

// A writer blocked on the scope's row behind a newer writer's open
// transaction re-checks against the committed row: refused if its token is
// now below the floor, admitted if not. (SQLite has no row locks: IMMEDIATE
// transactions run one at a time, so a writer never checks against a
// transaction that is still open.)
func TestBlockedWriterRechecks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		blocked fencing.Token
		stale   bool
	}{
		{"older token is refused", 4, true},
		{"newer token is admitted", 9, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, dm := range serverModes {
				d, mode := dm.d, dm.mode
				t.Run(mode+"/"+d.String(), func(t *testing.T) {
					db := sqltest.Open(t, d)
					ctx := testCtx(t)
					createLog(t, db)
					f := newFence(t, db)
					run := doWith(f, mode)
					require.NoError(t, f.Fence(ctx, "s", 2))

					inside, release := make(chan struct{}), make(chan struct{})
					holder := make(chan error, 1)
					go func() {
						holder <- run(ctx, "s", 6, func(tx sqlfence.Querier) error {
							close(inside)
							<-release
							return appendLog(ctx, db, tx, 6, 1)
						})
					}()
					select {
					case <-inside:
					case err := <-holder:
						t.Fatalf("holder: %v", err)
					}
					blocked := make(chan error, 1)
					go func() {
						blocked <- run(ctx, "s", tc.blocked, func(tx sqlfence.Querier) error {
							return appendLog(ctx, db, tx, tc.blocked, 2)
						})
					}()
					// Wait until the second writer's check waits on the row
					// lock: the servers report it, they do not notify it, so
					// poll (no time limit but the test's context).
					for lockWaiters(t, db) == 0 {
						select {
						case err := <-blocked:
							t.Fatalf("second writer returned without waiting: %v", err)
						case <-time.After(10 * time.Millisecond):
						}
					}
					close(release)
					require.NoError(t, <-holder)
					err := <-blocked
					if tc.stale {
						requireStale(t, err, "s", tc.blocked, 6)
						require.Equal(t, []logRow{{6, 1}}, readLog(t, db))
					} else {
						require.NoError(t, err)
						require.Equal(t, []logRow{{6, 1}, {int64(tc.blocked), 2}}, readLog(t, db))
					}
				})
			}
		})
	}
}

func Example() {
	// db, _ := sql.Open("pgx", "postgres://app@db/app")
	dir := exampleDir()
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", sqlfence.SQLiteDSN(dir+"/app.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	f, err := sqlfence.New(db, sqlfence.SQLite)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	_, _ = db.ExecContext(ctx, "CREATE TABLE report (id INTEGER PRIMARY KEY, body TEXT)")

	// token is held.Token() of a lock.Held (or COORD_FENCING_TOKEN).
	write := func(token fencing.Token, body string) error {
		return f.Do(ctx, "jobs/report", token, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO report (id, body) VALUES (1, ?)", body)
			return err
		})
	}
	fmt.Println(write(42, "from holder 42"))
	fmt.Println(write(41, "late write of holder 41"))
	fmt.Println(errors.Is(write(41, "again"), fencing.ErrStale))
	// Output:
	// <nil>
	// fencing: stale token 41 for scope "jobs/report": floor is 42
	// true
}
