package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
)

// Issue 31: a fence table made beforehand with a non-transactional engine
// (MyISAM) is refused on first use, naming the table and the engine, and
// nothing is written to it; one CREATE TABLE makes is InnoDB.
func TestNotTransactionalTableRefused(t *testing.T) {
	db := sqltest.Open(t, sqlfence.MySQL)
	ctx := testCtx(t)
	createLog(t, db)
	for _, table := range []string{sqlfence.DefaultTable, "my_fence", db.Name + ".qualified_fence"} {
		t.Run(table, func(t *testing.T) {
			_, err := db.Exec("CREATE TABLE " + table + " (scope VARBINARY(512) NOT NULL PRIMARY KEY, token BIGINT NOT NULL, writes BIGINT NOT NULL) ENGINE=MyISAM")
			require.NoError(t, err)
			f := newFence(t, db, sqlfence.WithTable(table))
			for _, mode := range modes {
				err := doWith(f, mode)(ctx, "jobs/", 100, func(tx sqlfence.Querier) error {
					t.Error("fn called on a MyISAM fence table")
					return appendLog(ctx, db, tx, 100, 1)
				})
				require.ErrorIs(t, err, sqlfence.ErrNotTransactional, mode)
				require.ErrorContains(t, err, table)
				require.ErrorContains(t, err, "MyISAM")
			}
			require.ErrorIs(t, f.Fence(ctx, "jobs/", 100), sqlfence.ErrNotTransactional)
			_, err = f.Floor(ctx, "jobs/")
			require.ErrorIs(t, err, sqlfence.ErrNotTransactional)
			var n int
			require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+table).Scan(&n))
			require.Zero(t, n, "nothing written to the fence table")
			require.Empty(t, readLog(t, db))

			// Made transactional, the same Fence works (a refusal is not cached).
			_, err = db.Exec("ALTER TABLE " + table + " ENGINE=InnoDB")
			require.NoError(t, err)
			require.NoError(t, f.Fence(ctx, "jobs/", 100))
		})
	}
	// The table the Fence creates itself is InnoDB whatever the server's default.
	_, err := db.Exec("SET SESSION default_storage_engine = MyISAM")
	require.NoError(t, err)
	db.SetMaxOpenConns(1) // the session setting stays on the one connection
	f := newFence(t, db, sqlfence.WithTable("fresh_fence"))
	require.NoError(t, f.Fence(ctx, "jobs/", 1))
	var engine string
	require.NoError(t, db.QueryRow("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'fresh_fence'").Scan(&engine))
	require.Equal(t, "InnoDB", engine)
}

// Issue 31: a fenced statement that rewrites the fence row itself (lowers
// it, raises it, deletes it) must not commit while Do reports the token
// admitted: with WithRecheck Do re-checks the row before COMMIT, rolls back
// and returns ErrFenceMoved; the floor stays, and a token below it is still
// refused.
func TestStatementCannotMoveTheFence(t *testing.T) {
	eachMode(t, func(t *testing.T, db *sqltest.DB, mode string) {
		ctx := testCtx(t)
		createLog(t, db)
		for i, tc := range []struct{ name, stmt string }{
			{"lowered", "UPDATE coordkit_fence SET token = 1 WHERE scope = ?"},
			{"lowered, every scope", "UPDATE coordkit_fence SET token = 1"},
			{"raised", "UPDATE coordkit_fence SET token = token + 1000 WHERE scope = ?"},
			{"deleted", "DELETE FROM coordkit_fence WHERE scope = ?"},
		} {
			for _, path := range []string{"shared", "exclusive"} {
				t.Run(tc.name+"/"+path, func(t *testing.T) {
					scope := fmt.Sprintf("jobs%d%s/", i, path)
					f := newFence(t, db, sqlfence.WithRecheck())
					require.NoError(t, f.Fence(ctx, scope, 100))
					token := fencing.Token(100) // equal to the floor: the shared check
					if path == "exclusive" {
						token = 101 // a raise
					}
					err := doWith(f, mode)(ctx, scope, token, func(tx sqlfence.Querier) error {
						if err := appendLog(ctx, db, tx, token, i); err != nil {
							return err
						}
						var args []any
						if strings.Contains(tc.stmt, "?") {
							args = append(args, scope)
						}
						_, err := tx.ExecContext(ctx, db.Rebind(tc.stmt), args...)
						return err
					})
					require.ErrorIs(t, err, sqlfence.ErrFenceMoved)
					require.ErrorContains(t, err, "nothing was committed in transactional tables")
					require.Empty(t, readLog(t, db))
					floor, err := f.Floor(ctx, scope)
					require.NoError(t, err)
					require.Equal(t, fencing.Token(100), floor, "the floor committed is the one before")
					requireStale(t, newFence(t, db).Fence(ctx, scope, 50), scope, 50, 100)
				})
			}
		}
		// DoConn on MySQL with multiStatements=true sends the re-check with
		// the COMMIT: the same refusal.
		if db.Dialect == sqlfence.MySQL && mode == "DoConn" {
			mdb := openMulti(t, db)
			f := newFence(t, &sqltest.DB{DB: mdb, Dialect: db.Dialect}, sqlfence.WithRecheck())
			require.NoError(t, f.Fence(ctx, "multi/", 100))
			require.NoError(t, f.DoConn(ctx, "multi/", 100, func(sqlfence.Querier) error { return nil }), "learns multiStatements")
			err := f.DoConn(ctx, "multi/", 100, func(q sqlfence.Querier) error {
				if err := appendLog(ctx, db, q, 100, 99); err != nil {
					return err
				}
				_, err := q.ExecContext(ctx, "UPDATE coordkit_fence SET token = 1 WHERE scope = 'multi/'")
				return err
			})
			require.ErrorIs(t, err, sqlfence.ErrFenceMoved)
			require.NotErrorIs(t, err, sqlfence.ErrCommitUnknown)
			require.Empty(t, readLog(t, db))
			floor, err := f.Floor(ctx, "multi/")
			require.NoError(t, err)
			require.Equal(t, fencing.Token(100), floor)
			require.NoError(t, f.DoConn(ctx, "multi/", 100, func(q sqlfence.Querier) error { return appendLog(ctx, db, q, 100, 98) }))
			require.Equal(t, []logRow{{100, 98}}, readLog(t, db))
			_, err = db.Exec("DELETE FROM biz")
			require.NoError(t, err)
		}
		// Without WithRecheck the moved floor commits (the package doc's
		// limitation): the option is what holds it.
		plain := newFence(t, db)
		require.NoError(t, plain.Fence(ctx, "plain/", 100))
		require.NoError(t, doWith(plain, mode)(ctx, "plain/", 100, func(tx sqlfence.Querier) error {
			_, err := tx.ExecContext(ctx, db.Rebind("UPDATE coordkit_fence SET token = 1 WHERE scope = ?"), "plain/")
			return err
		}))
		floor, err := plain.Floor(ctx, "plain/")
		require.NoError(t, err)
		require.Equal(t, fencing.Token(1), floor)

		// A statement that reads the fence row, or writes it without moving
		// the token, is no trouble.
		f := newFence(t, db, sqlfence.WithRecheck())
		require.NoError(t, doWith(f, mode)(ctx, "reader/", 7, func(tx sqlfence.Querier) error {
			var n int64
			if err := tx.QueryRowContext(ctx, db.Rebind("SELECT token FROM coordkit_fence WHERE scope = ?"), "reader/").Scan(&n); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, db.Rebind("UPDATE coordkit_fence SET writes = writes WHERE scope = ?"), "reader/")
			return err
		}))
	})
}

// openMulti opens db's MySQL database with multiStatements=true.
func openMulti(t *testing.T, db *sqltest.DB) *sql.DB {
	t.Helper()
	mdb, err := sql.Open(db.Driver, db.DSN+"?multiStatements=true")
	require.NoError(t, err)
	t.Cleanup(func() { _ = mdb.Close() })
	return mdb
}

// fencedAt opens a fresh database of d with the log table and a Fence
// whose scope's floor is floor, and returns the Fence's run of mode.
func fencedAt(t *testing.T, d sqlfence.Dialect, mode, scope string, floor fencing.Token) (*sqltest.DB, context.Context, *sqlfence.Fence, doFunc) {
	t.Helper()
	db := sqltest.Open(t, d)
	ctx := testCtx(t)
	createLog(t, db)
	f := newFence(t, db)
	require.NoError(t, f.Fence(ctx, scope, floor))
	return db, ctx, f, doWith(f, mode)
}

// holdInside runs a fenced transaction of token in scope whose fn appends
// to the log and then waits for release; inside is closed once fn runs.
func holdInside(ctx context.Context, run doFunc, db *sqltest.DB, scope string, token fencing.Token, attempt int, release <-chan struct{}) (inside <-chan struct{}, done <-chan error) {
	in, out := make(chan struct{}), make(chan error, 1)
	go func() {
		out <- run(ctx, scope, token, func(tx sqlfence.Querier) error {
			if err := appendLog(ctx, db, tx, token, attempt); err != nil {
				return err
			}
			close(in)
			select { // the test's end releases it too, should it fail first
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
	}()
	return in, out
}

func waitInside(t *testing.T, inside <-chan struct{}, done <-chan error) {
	t.Helper()
	select {
	case <-inside:
	case err := <-done:
		t.Fatalf("writer returned before its fn ran: %v", err)
	}
}

// waitLockWaiter waits (no limit but the test's context) until a session
// of db waits for a row lock, failing if done delivers first.
func waitLockWaiter(t *testing.T, db *sqltest.DB, done <-chan error) {
	t.Helper()
	for lockWaiters(t, db) == 0 {
		select {
		case err := <-done:
			t.Fatalf("returned without waiting for the row lock: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// The cheap check: two writers with the token equal to the floor are
// inside their transactions at once (they share the fence row's lock), and
// a raise by a higher token waits until both have committed; afterwards
// the lower token is refused. If the shared check took no lock, the raise
// would not wait and this fails.
func TestRaiseWaitsForSharedHolders(t *testing.T) {
	for _, dm := range serverModes {
		t.Run(dm.mode+"/"+dm.d.String(), func(t *testing.T) {
			db, ctx, _, run := fencedAt(t, dm.d, dm.mode, "s/", 5)
			release := make(chan struct{})
			in1, done1 := holdInside(ctx, run, db, "s/", 5, 1, release)
			in2, done2 := holdInside(ctx, run, db, "s/", 5, 2, release)
			waitInside(t, in1, done1)
			waitInside(t, in2, done2)

			raiser := newFence(t, db) // another process, the next holder
			raised := make(chan error, 1)
			go func() {
				raised <- doWith(raiser, dm.mode)(ctx, "s/", 6, func(tx sqlfence.Querier) error { return appendLog(ctx, db, tx, 6, 3) })
			}()
			waitLockWaiter(t, db, raised)
			close(release)
			require.NoError(t, <-done1)
			require.NoError(t, <-done2)
			require.NoError(t, <-raised)
			requireStale(t, run(ctx, "s/", 5, func(tx sqlfence.Querier) error { return appendLog(ctx, db, tx, 5, 4) }), "s/", 5, 6)
			log := readLog(t, db)
			require.Len(t, log, 3)
			require.ElementsMatch(t, []logRow{{5, 1}, {5, 2}}, log[:2])
			require.Equal(t, logRow{6, 3}, log[2])
			require.Equal(t, int64(2), writes(t, db, "s/"), "written by the two raises only")
		})
	}
}

// A raise by token N+1 races writers at token N that keep writing: none of
// N's writes commits after N+1's raise (in the log's order, which the lock
// makes commit order), every writer told ok is in the log, and after the
// raise N is refused.
func TestRaiseRacesWritersAtTheFloor(t *testing.T) {
	for _, dm := range serverModes {
		t.Run(dm.mode+"/"+dm.d.String(), func(t *testing.T) {
			db := sqltest.Open(t, dm.d)
			ctx := testCtx(t)
			createLog(t, db)
			require.NoError(t, newFence(t, db).Fence(ctx, "race/", 10))
			const writers = 4
			var wg sync.WaitGroup
			var mu sync.Mutex
			told := map[int64]bool{}
			stop := make(chan struct{})
			started := make(chan struct{}, writers)
			for w := range writers {
				f := newFence(t, db)
				run := doWith(f, dm.mode)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						attempt := int64(w*100000 + i)
						err := run(ctx, "race/", 10, func(tx sqlfence.Querier) error { return appendLog(ctx, db, tx, 10, int(attempt)) })
						if i == 0 {
							started <- struct{}{}
						}
						switch {
						case err == nil:
							mu.Lock()
							told[attempt] = true
							mu.Unlock()
						case errors.Is(err, fencing.ErrStale):
							return // refused from the raise on
						default:
							t.Errorf("writer %d: %v", w, err)
							return
						}
						select {
						case <-stop:
							return
						default:
						}
					}
				}()
			}
			for range writers {
				<-started
			}
			require.NoError(t, doWith(newFence(t, db), dm.mode)(ctx, "race/", 11, func(tx sqlfence.Querier) error { return appendLog(ctx, db, tx, 11, -1) }))
			close(stop)
			wg.Wait()
			log := readLog(t, db)
			raiseAt := -1
			for i, row := range log {
				if row.token == 11 {
					raiseAt = i
					continue
				}
				require.True(t, told[row.attempt], "attempt %d committed but was not told ok", row.attempt)
				require.Equal(t, -1, raiseAt, "a write of token 10 (attempt %d) committed after the raise to 11", row.attempt)
			}
			require.Equal(t, len(log)-1, raiseAt)
			require.Len(t, told, len(log)-1)
			t.Logf("%d writes of token 10 before the raise", len(log)-1)
			requireStale(t, newFence(t, db).Fence(ctx, "race/", 10), "race/", 10, 11)
		})
	}
}

// Two writers share the fence row's lock and both try to write the row
// (a statement of theirs rewrites it without moving the token): each waits
// for the other's shared lock, a deadlock. The engine picks one; that
// writer's error says so and nothing of it commits; the other commits.
// (The package itself never upgrades a shared lock: a raise takes the
// exclusive check from the start.)
func TestSharedHoldersUpgradingDeadlock(t *testing.T) {
	for _, dm := range serverModes {
		t.Run(dm.mode+"/"+dm.d.String(), func(t *testing.T) {
			db, ctx, f, run := fencedAt(t, dm.d, dm.mode, "d/", 5)
			touch := db.Rebind("UPDATE coordkit_fence SET writes = writes + 1 WHERE scope = ?")
			var ins [2]chan struct{}
			var gos [2]chan struct{}
			dones := make([]chan error, 2)
			for i := range 2 {
				ins[i], gos[i], dones[i] = make(chan struct{}), make(chan struct{}), make(chan error, 1)
				go func() {
					dones[i] <- run(ctx, "d/", 5, func(tx sqlfence.Querier) error {
						if err := appendLog(ctx, db, tx, 5, i); err != nil {
							return err
						}
						close(ins[i])
						select {
						case <-gos[i]:
						case <-ctx.Done():
						}
						_, err := tx.ExecContext(ctx, touch, "d/")
						return err
					})
				}()
			}
			waitInside(t, ins[0], dones[0])
			waitInside(t, ins[1], dones[1])
			close(gos[0])
			waitLockWaiter(t, db, dones[0])
			close(gos[1])
			errs := []error{<-dones[0], <-dones[1]}
			var failed, ok int
			for i, err := range errs {
				if err == nil {
					ok = i
					continue
				}
				failed++
				require.Contains(t, strings.ToLower(err.Error()), "deadlock", "writer %d", i)
				require.ErrorContains(t, err, "rolled back")
				require.NotErrorIs(t, err, sqlfence.ErrCommitUnknown)
			}
			require.Equal(t, 1, failed, "one deadlock victim: %v", errs)
			require.Equal(t, []logRow{{5, int64(ok)}}, readLog(t, db))
			floor, err := f.Floor(ctx, "d/")
			require.NoError(t, err)
			require.Equal(t, fencing.Token(5), floor)
		})
	}
}

// 16 writers on distinct scopes must not wait for each other's shared
// checks: the check is a point lookup on the scope's primary key, so the
// engine locks that one row (InnoDB: a record lock, no gap lock), and a
// raise of a neighbouring scope's row, or the insert of a new scope's row
// next to it, goes through while a shared holder sits inside its
// transaction. If the shared check locked a range, these would wait for
// the release below, which comes only after they returned.
func TestOtherScopesDoNotWaitForTheSharedLock(t *testing.T) {
	for _, dm := range serverModes {
		t.Run(dm.mode+"/"+dm.d.String(), func(t *testing.T) {
			db, ctx, f, run := fencedAt(t, dm.d, dm.mode, "b/", 5)
			for _, s := range []string{"a/", "c/"} {
				require.NoError(t, f.Fence(ctx, s, 5))
			}
			release := make(chan struct{})
			defer close(release)
			in, done := holdInside(ctx, run, db, "b/", 5, 1, release)
			waitInside(t, in, done)

			other := newFence(t, db) // another process
			nothing := func(sqlfence.Querier) error { return nil }
			for _, tc := range []struct {
				name string
				op   func() error
			}{
				{"raise a/", func() error { return other.Fence(ctx, "a/", 6) }},
				{"raise c/", func() error { return other.Fence(ctx, "c/", 6) }},
				{"new scope b0/", func() error { return doWith(other, dm.mode)(ctx, "b0/", 3, nothing) }},
				{"shared check of c/", func() error { return doWith(other, dm.mode)(ctx, "c/", 6, nothing) }},
			} {
				res := make(chan error, 1)
				go func() { res <- tc.op() }()
				select {
				case err := <-res:
					require.NoError(t, err, tc.name)
				case err := <-done:
					t.Fatalf("the holder returned early: %v", err)
				case <-time.After(20 * time.Second):
					t.Fatalf("%s waited for scope b/'s shared lock (a lock wider than its row?)", tc.name)
				}
			}
		})
	}
}
