package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
)

// waitFloor waits (no limit but ctx's) until the scope's floor, read on a
// connection of its own, is want.
func waitFloor(ctx context.Context, t *testing.T, f *sqlfence.Fence, scope string, want fencing.Token) {
	t.Helper()
	for {
		floor, err := f.Floor(ctx, scope)
		require.NoError(t, err)
		if floor == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("floor of %q stayed %d, want %d: %v", scope, floor, want, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Issue 25 item 1: the server commits, its answer to COMMIT is lost. Do
// must say the outcome is unknown (ErrCommitUnknown), not that nothing was
// committed: the row and the floor are there.
func TestDoCommitAnswerLost(t *testing.T) {
	for _, dm := range serverModes {
		d, mode := dm.d, dm.mode
		t.Run(mode+"/"+d.String(), func(t *testing.T) {
			db := sqltest.Open(t, d)
			ctx := testCtx(t)
			createLog(t, db)
			direct := newFence(t, db)
			require.NoError(t, direct.Fence(ctx, "jobs/ack", 3))

			p := sqltest.NewProxy(t, db)
			dsn := p.DSN
			if d == sqlfence.MySQL {
				// go-sql-driver's COMMIT does not follow the context: only
				// the DSN's read timeout ends the wait for its answer.
				dsn += "?readTimeout=2s"
			}
			pdb, err := sql.Open(db.Driver, dsn)
			require.NoError(t, err)
			defer pdb.Close()
			f, err := sqlfence.New(pdb, d)
			require.NoError(t, err)
			require.NoError(t, f.Fence(ctx, "jobs/ack", 4), "through the proxy, not armed yet")
			p.LoseCommitAnswers()

			doCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			res := make(chan error, 1)
			go func() {
				res <- doWith(f, mode)(doCtx, "jobs/ack", 1000, func(tx sqlfence.Querier) error { return appendLog(doCtx, db, tx, 1000, 1) })
			}()
			// The server committed (seen on a connection of its own); the
			// client still waits for the answer. Then its context ends.
			waitFloor(ctx, t, direct, "jobs/ack", 1000)
			cancel()
			err = <-res
			require.ErrorIs(t, err, sqlfence.ErrCommitUnknown)
			require.NotErrorIs(t, err, fencing.ErrStale)
			require.ErrorContains(t, err, "may or may not be committed")
			require.Equal(t, []logRow{{1000, 1}}, readLog(t, db), "committed, as the server says")
		})
	}
}

// A context that ends before COMMIT is sent: nothing committed, and Do
// says so (not ErrCommitUnknown).
func TestDoContextEndsBeforeCommit(t *testing.T) {
	eachMode(t, func(t *testing.T, db *sqltest.DB, mode string) {
		ctx := testCtx(t)
		createLog(t, db)
		f := newFence(t, db)
		run := doWith(f, mode)
		require.NoError(t, f.Fence(ctx, "s", 2))
		doCtx, cancel := context.WithCancel(ctx)
		err := run(doCtx, "s", 5, func(tx sqlfence.Querier) error {
			err := appendLog(doCtx, db, tx, 5, 1)
			cancel()
			return err
		})
		require.Error(t, err)
		require.NotErrorIs(t, err, sqlfence.ErrCommitUnknown)
		require.Empty(t, readLog(t, db))
		floor, err := f.Floor(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, fencing.Token(2), floor)
	})
}

// Issue 25 item 2: fn ends the fence's transaction itself. Do notices
// before its own COMMIT and says that statements ran outside the fence,
// instead of "committed" or "rolled back".
func TestDoNoticesStatementsOutsideTheFence(t *testing.T) {
	eachMode(t, func(t *testing.T, db *sqltest.DB, mode string) {
		ctx := testCtx(t)
		createLog(t, db)
		f := newFence(t, db)
		run := doWith(f, mode)
		boom := errors.New("boom")
		exec := func(tx sqlfence.Querier, q string) error { _, err := tx.ExecContext(ctx, q); return err }
		cases := []struct {
			name string
			fn   func(tx sqlfence.Querier, tok fencing.Token) error
			want error // also matched, besides ErrOutsideFence
		}{
			{"commit inside", func(tx sqlfence.Querier, tok fencing.Token) error {
				if err := appendLog(ctx, db, tx, tok, 1); err != nil {
					return err
				}
				if err := exec(tx, "COMMIT"); err != nil {
					return err
				}
				return appendLog(ctx, db, tx, tok, 2)
			}, nil},
			{"rollback inside", func(tx sqlfence.Querier, tok fencing.Token) error {
				if err := exec(tx, "ROLLBACK"); err != nil {
					return err
				}
				return appendLog(ctx, db, tx, tok, 3)
			}, nil},
			{"commit inside, then fn fails", func(tx sqlfence.Querier, tok fencing.Token) error {
				if err := exec(tx, "COMMIT"); err != nil {
					return err
				}
				return boom
			}, boom},
		}
		if db.Dialect == sqlfence.MySQL {
			cases = append(cases, struct {
				name string
				fn   func(tx sqlfence.Querier, tok fencing.Token) error
				want error
			}{"implicit commit by DDL", func(tx sqlfence.Querier, tok fencing.Token) error {
				if err := appendLog(ctx, db, tx, tok, 4); err != nil {
					return err
				}
				return exec(tx, "CREATE TABLE ddl_inside (id INT)")
			}, nil})
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				tok := fencing.Token(10 + i)
				err := run(ctx, "s", tok, func(tx sqlfence.Querier) error { return tc.fn(tx, tok) })
				require.ErrorIs(t, err, sqlfence.ErrOutsideFence)
				if tc.want != nil {
					require.ErrorIs(t, err, tc.want)
				}
				require.NotContains(t, err.Error(), "rolled back:")
				// The fence still works on the pool afterwards.
				require.NoError(t, f.Fence(ctx, "s", tok))
			})
		}
	})
}

// A statement that fails and fn goes on (PostgreSQL aborts the whole
// transaction): Do reports a rollback, not success and not "outside".
func TestDoFailedTransactionIsNotCommitted(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) { testFailedTransactionIsNotCommitted(t, mode) })
	}
}

func testFailedTransactionIsNotCommitted(t *testing.T, mode string) {
	db := sqltest.Open(t, sqlfence.Postgres)
	ctx := testCtx(t)
	createLog(t, db)
	f := newFence(t, db)
	err := doWith(f, mode)(ctx, "s", 3, func(tx sqlfence.Querier) error {
		if err := appendLog(ctx, db, tx, 3, 1); err != nil {
			return err
		}
		_, _ = tx.ExecContext(ctx, "SELECT 1/0") // error ignored
		return nil
	})
	require.Error(t, err)
	require.NotErrorIs(t, err, sqlfence.ErrOutsideFence)
	require.NotErrorIs(t, err, sqlfence.ErrCommitUnknown)
	require.ErrorContains(t, err, "rolled back")
	require.Empty(t, readLog(t, db))
}

// The adversarial pass after issue 25: fn ends the fence's transaction
// and begins another (COMMIT; BEGIN, or a MySQL procedure that does so).
// The connection is in a transaction again at fn's end, so the status
// alone passes it for the fence's own: with WithSavepointCheck, Do says
// that statements ran outside the fence, also when fn then fails.
func TestSavepointCheckNoticesATransactionBegunAnew(t *testing.T) {
	eachMode(t, func(t *testing.T, db *sqltest.DB, mode string) {
		ctx := testCtx(t)
		createLog(t, db)
		f := newFence(t, db, sqlfence.WithSavepointCheck())
		plain := newFence(t, db)
		begin := "BEGIN"
		if db.Dialect == sqlfence.MySQL {
			begin = "START TRANSACTION"
		}
		boom := errors.New("boom")
		exec := func(tx sqlfence.Querier, q string) error { _, err := tx.ExecContext(ctx, q); return err }
		anew := func(tok fencing.Token, then error) func(sqlfence.Querier) error {
			return func(tx sqlfence.Querier) error {
				if err := appendLog(ctx, db, tx, tok, 1); err != nil {
					return err
				}
				if err := exec(tx, "COMMIT"); err != nil {
					return err
				}
				if err := exec(tx, begin); err != nil {
					return err
				}
				if err := appendLog(ctx, db, tx, tok, 2); err != nil {
					return err
				}
				if then != nil && db.Dialect == sqlfence.Postgres {
					_ = exec(tx, "SELECT 1/0") // a failed transaction, as a failed statement leaves it
				}
				return then
			}
		}
		for i, then := range []error{nil, boom} {
			tok := fencing.Token(10 + 2*i)
			err := doWith(f, mode)(ctx, "s", tok, anew(tok, then))
			require.ErrorIs(t, err, sqlfence.ErrOutsideFence, "fn ended with %v", then)
			require.NotContains(t, err.Error(), "rolled back:")
			// What the status alone says (the package doc's limitation).
			err = doWith(plain, mode)(ctx, "s", tok+1, anew(tok+1, then))
			if then == nil {
				require.NoError(t, err)
			} else {
				require.NotErrorIs(t, err, sqlfence.ErrOutsideFence)
			}
		}
		// Savepoints of fn's own are no trouble.
		require.NoError(t, doWith(f, mode)(ctx, "s", 20, func(tx sqlfence.Querier) error {
			for _, q := range []string{"SAVEPOINT a", "ROLLBACK TO SAVEPOINT a", "RELEASE SAVEPOINT a"} {
				if err := exec(tx, q); err != nil {
					return err
				}
			}
			return appendLog(ctx, db, tx, 20, 1)
		}))
		floor, err := f.Floor(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, fencing.Token(20), floor)
	})
}
