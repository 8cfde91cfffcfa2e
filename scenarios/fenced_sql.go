package scenarios

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	_ "github.com/go-sql-driver/mysql" // driver "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	clientv3 "go.etcd.io/etcd/client/v3"
	_ "modernc.org/sqlite" // driver "sqlite"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/scenarios/report"
	"github.com/coordkit/coordkit/session"
)

// The claims of fenced-sql.
const (
	claimSQLSuccessor       ClaimID = "successor-after-lease"
	claimSQLFencedRejects   ClaimID = "sql-fence-rejects-late-update"
	claimSQLUnfencedLost    ClaimID = "sql-unfenced-lost-update"
	claimSQLFloorIsNewToken ClaimID = "sql-floor-is-successors-token"
)

func fencedSQL() Scenario {
	return Scenario{
		Name:    "fenced-sql",
		Summary: "The paused lock holder against a SQL database: its late UPDATE is refused by the fence check in the same transaction (sqlfence) and silently overwrites its successor's without it. SQLite by default; PostgreSQL or MySQL with Env.SQLDriver/SQLDSN.",
		Claims: []Claim{
			{ID: claimSQLSuccessor, Kind: Safety, Text: "a holder frozen past its lease loses the lock to a successor with a larger token, and still sends its write when it wakes"},
			{ID: claimSQLFencedRejects, Kind: Safety, Text: "with the fence check first in the transaction, the late UPDATE is rejected as stale and nothing of it commits: the successor's write stays"},
			{ID: claimSQLUnfencedLost, Kind: Safety, Text: "without the check the database takes the late UPDATE and the successor's write is lost"},
			{ID: claimSQLFloorIsNewToken, Kind: Safety, Text: "the scope's floor in the fence table is the successor's token: the rejected write did not move it"},
		},
		Run: runFencedSQL,
	}
}

const (
	sqlScope       = "jobs/account"
	sqlFencedRow   = 1
	sqlUnfencedRow = 2
)

// sqlRun is one run of fenced-sql: what setup built, what the acts
// observed, what judge turns into verdicts.
type sqlRun struct {
	env     Env
	ttl     time.Duration
	rep     *report.Report
	rec     *report.Recorder
	closers []func()

	conn       *etcdConn
	cliA, cliB *clientv3.Client
	dialect    sqlfence.Dialect
	db         *sql.DB
	fence      *sqlfence.Fence
	account    string // the business table
	where      string // where the database is, for the report

	heldA, heldB         *lock.Held
	acquiredA, acquiredB time.Time
	readA                map[int]int64
	writeB, writeA       map[int]error
	final                map[int]int64
	floor                fencing.Token
}

var sqlRows = []struct {
	id   int
	name string
}{{sqlFencedRow, "fenced"}, {sqlUnfencedRow, "unfenced"}}

func runFencedSQL(ctx context.Context, env Env) (*report.Report, error) {
	r := &sqlRun{env: env, ttl: env.LockTTL, rep: report.New("fenced-sql", ""), rec: report.NewRecorder(nil)}
	if r.ttl == 0 {
		r.ttl = defaultLockTTL
	}
	defer r.close()
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second+2*r.ttl)
	defer cancel()
	if err := r.act(ctx); err != nil {
		return nil, err
	}
	r.judge()
	return r.rep, nil
}

func (r *sqlRun) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// q rewrites ? placeholders for PostgreSQL.
func (r *sqlRun) q(query string) string {
	if r.dialect != sqlfence.Postgres {
		return query
	}
	out, n := []byte{}, 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			out = append(out, '$')
			out = strconv.AppendInt(out, int64(n), 10)
			continue
		}
		out = append(out, query[i])
	}
	return string(out)
}

// setup starts etcd and opens the database: Env.SQLDSN (a SQLite one
// through sqlfence.NormalizeDSN), else a SQLite file in TempDir. There it
// creates two tables with random names (the account table and the fence
// table), dropped at the end.
func (r *sqlRun) setup(ctx context.Context) error {
	r.rec.Heading("A lock holder, a SQL database, and a pause")
	conn, err := startEtcd(ctx, r.env, "fenced-sql")
	if err != nil {
		return err
	}
	r.conn = conn
	r.closers = append(r.closers, conn.Close)
	if r.cliA, err = conn.Client(ctx); err != nil {
		return err
	}
	if r.cliB, err = conn.Client(ctx); err != nil {
		return err
	}
	return r.setupDB(ctx)
}

// setupDB opens the database and creates the two tables (see setup).
func (r *sqlRun) setupDB(ctx context.Context) error {
	var err error
	if r.dialect, err = r.env.sqlDialect(); err != nil {
		return err
	}
	dsn := r.env.SQLDSN
	r.where = r.dialect.String() + " (the DSN given)"
	if dsn != "" {
		// a SQLite path or file: URI gets IMMEDIATE transactions
		if dsn, err = sqlfence.NormalizeDSN(r.dialect, dsn); err != nil {
			return fmt.Errorf("%w SQL DSN: %v", ErrInvalid, err)
		}
	} else {
		dir, err := r.env.freshDir("fenced-sql")
		if err != nil {
			return err
		}
		path := filepath.Join(dir, "fenced-sql.db")
		dsn, r.where = sqlfence.SQLiteDSN(path), "sqlite (a file in the run's directory)"
	}
	if r.db, err = sql.Open(r.dialect.DriverName(), dsn); err != nil {
		return fmt.Errorf("open %s: %w", r.dialect, err)
	}
	r.closers = append(r.closers, func() { _ = r.db.Close() })
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.db.PingContext(pctx); err != nil {
		return fmt.Errorf("connect to %s: %w", r.dialect, err)
	}
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	prefix := "coordkit_scn_" + hex.EncodeToString(b)
	r.account = prefix + "_account"
	fenceTable := prefix + "_fence"
	if r.fence, err = sqlfence.New(r.db, r.dialect, sqlfence.WithTable(fenceTable)); err != nil {
		return err
	}
	r.closers = append(r.closers, func() {
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, t := range []string{r.account, fenceTable} {
			_, _ = r.db.ExecContext(dctx, "DROP TABLE IF EXISTS "+t)
		}
	})
	if _, err := r.db.ExecContext(ctx, "CREATE TABLE "+r.account+" (id INTEGER NOT NULL PRIMARY KEY, balance BIGINT NOT NULL)"); err != nil {
		return fmt.Errorf("create %s: %w", r.account, err)
	}
	for _, row := range sqlRows {
		if _, err := r.db.ExecContext(ctx, r.q("INSERT INTO "+r.account+" (id, balance) VALUES (?, ?)"), row.id, initialBalance); err != nil {
			return fmt.Errorf("insert into %s: %w", r.account, err)
		}
	}
	r.rec.Step("database", "setup", fmt.Sprintf("%s: table %s, row %d (written through the fence check) and row %d (written without it), balance %d each; fence table %s",
		r.where, r.account, sqlFencedRow, sqlUnfencedRow, initialBalance, fenceTable), 0)
	return nil
}

func (r *sqlRun) op(client, desc string, call time.Time, err error) {
	outcome := report.OutcomeOK
	if err != nil {
		outcome = report.OutcomeFail
		desc += ": " + shortErr(err)
	}
	r.rec.Op(client, desc, call, time.Now(), outcome)
}

func (r *sqlRun) balance(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id int) (int64, error) {
	var v int64
	err := q.QueryRowContext(ctx, r.q("SELECT balance FROM "+r.account+" WHERE id = ?"), id).Scan(&v)
	return v, err
}

// deposit sets row id to balance in one transaction: through the fence
// check with token when fenced, plainly otherwise.
func (r *sqlRun) deposit(ctx context.Context, id int, fenced bool, token fencing.Token, balance func(tx *sql.Tx) (int64, error)) error {
	write := func(tx *sql.Tx) error {
		v, err := balance(tx)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, r.q("UPDATE "+r.account+" SET balance = ? WHERE id = ?"), v, id)
		return err
	}
	if fenced {
		return r.fence.Do(ctx, sqlScope, token, write)
	}
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := write(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// act: A takes the lock, reads and freezes; B takes over after A's lease
// expired and deposits 30 on both rows; A wakes and writes what it planned
// (its read plus 50) on both rows.
func (r *sqlRun) act(ctx context.Context) error {
	prefix := lock.WithPrefix(r.conn.Prefix + "/")
	mA, err := lock.New(r.cliA, "account", prefix, lock.WithTTL(r.ttl),
		lock.WithSessionOptions(session.WithKeepAliveInterval(time.Hour)))
	if err != nil {
		return err
	}
	defer mA.Close()
	mB, err := lock.New(r.cliB, "account", prefix, lock.WithTTL(r.ttl))
	if err != nil {
		return err
	}
	defer mB.Close()

	r.env.Progressf("fenced-sql: A takes the lock and freezes (lease TTL %s, no keepalives)", r.ttl)
	r.rec.Heading("1. A takes the lock, reads the balances and freezes")
	r.rec.State("A", report.StateIdle)
	r.rec.State("B", report.StateIdle)
	call := time.Now()
	if r.heldA, err = mA.Lock(ctx); err != nil {
		return fmt.Errorf("lock by A: %w", err)
	}
	r.acquiredA = time.Now()
	tokA := r.heldA.Token()
	r.rec.State("A", report.StateHolder)
	r.op("A", "lock → token "+tokA.String(), call, nil)
	r.rec.Step("A", "acquired", fmt.Sprintf("holds the lock with fencing token %d", tokA), uint64(tokA))
	if err := r.readBalancesA(ctx); err != nil {
		return err
	}
	r.rec.Step("A", "read", fmt.Sprintf("reads balance=%d and plans UPDATE ... SET balance = %d", r.readA[sqlFencedRow], r.readA[sqlFencedRow]+depositA), uint64(tokA))
	r.rec.State("A", report.StatePaused)
	r.rec.FaultStart("A frozen")
	r.rec.Step("A", "frozen", "stops running: no keepalives, no work", 0)

	r.env.Progressf("fenced-sql: B waits for the lock")
	r.rec.Heading("2. A's lease expires; B takes the lock and deposits")
	r.rec.State("B", report.StateWaiting)
	call = time.Now()
	if r.heldB, err = mB.Lock(ctx); err != nil {
		return fmt.Errorf("lock by B: %w", err)
	}
	r.acquiredB = time.Now()
	tokB := r.heldB.Token()
	r.rec.State("B", report.StateHolder)
	r.op("B", "lock → token "+tokB.String(), call, nil)
	r.rec.Step("B", "acquired", fmt.Sprintf("holds the lock with token %d, %s after A got it", tokB, r.acquiredB.Sub(r.acquiredA).Round(time.Millisecond)), uint64(tokB))
	r.depositB(ctx, tokB)
	r.rec.Step("B", "write", fmt.Sprintf("reads and writes balance=%d in one transaction: %s through the fence, %s without it",
		initialBalance+depositB, sqlVerdict(r.writeB[sqlFencedRow]), sqlVerdict(r.writeB[sqlUnfencedRow])), uint64(tokB))
	if err := r.heldB.Unlock(ctx); err != nil {
		return fmt.Errorf("unlock by B: %w", err)
	}
	r.rec.State("B", report.StateIdle)

	r.env.Progressf("fenced-sql: A wakes and sends its UPDATE")
	r.rec.Heading("3. A wakes and sends the UPDATE it planned")
	r.rec.FaultEnd("A frozen")
	r.rec.State("A", report.StateHolder)
	r.lateWritesA(ctx, tokA)
	_ = r.heldA.Unlock(ctx) // lost: it only cleans up
	r.rec.State("A", report.StateIdle)
	if err := r.finalBalances(ctx); err != nil {
		return err
	}
	var stale *fencing.StaleError
	if errors.As(r.writeA[sqlFencedRow], &stale) {
		r.rec.Step("fenced", "rejected", fmt.Sprintf("the fence check refuses token %d (floor %d) and the transaction rolls back: B's deposit survives (balance %d)", stale.Token, stale.Floor, r.final[sqlFencedRow]), uint64(tokA))
	} else {
		r.rec.Step("fenced", "accepted", "A's late UPDATE: "+sqlVerdict(r.writeA[sqlFencedRow])+" (this must not happen)", uint64(tokA))
	}
	if r.writeA[sqlUnfencedRow] == nil {
		r.rec.Step("unfenced", "accepted", fmt.Sprintf("the UPDATE commits: balance %d — B's deposit of %d is silently lost", r.final[sqlUnfencedRow], depositB), uint64(tokA))
	} else {
		r.rec.Step("unfenced", "failed", "A's late UPDATE: "+sqlVerdict(r.writeA[sqlUnfencedRow]), uint64(tokA))
	}
	return nil
}

func (r *sqlRun) judge() {
	rep, tokA, tokB := r.rep, r.heldA.Token(), r.heldB.Token()
	waitB := r.acquiredB.Sub(r.acquiredA)
	rep.Metric("token_a", float64(tokA), "")
	rep.Metric("token_b", float64(tokB), "")
	rep.Metric("lease_ttl_ms", float64(r.ttl.Milliseconds()), "ms")
	rep.Metric("b_acquired_after_ms", cluster.Ms(waitB), "ms")
	rep.Metric("floor_after", float64(r.floor), "")

	check(rep, claimSQLSuccessor,
		fmt.Sprintf("B acquires about one TTL (%s) after A, with a larger token; A's UPDATE is still sent", r.ttl),
		fmt.Sprintf("B acquired %s after A; tokens A=%d, B=%d; A sent both UPDATEs", waitB.Round(time.Millisecond), tokA, tokB),
		tokB > tokA && waitB >= r.ttl/2 && len(r.writeA) == len(sqlRows))

	var stale *fencing.StaleError
	isStale := errors.As(r.writeA[sqlFencedRow], &stale)
	want := int64(initialBalance + depositB)
	check(rep, claimSQLFencedRejects,
		fmt.Sprintf("A's token %d < floor %d: rejected as stale; the row keeps B's balance %d", tokA, tokB, want),
		fmt.Sprintf("B's write %s, A's late write %s; final balance %d", sqlVerdict(r.writeB[sqlFencedRow]), sqlVerdict(r.writeA[sqlFencedRow]), r.final[sqlFencedRow]),
		r.writeB[sqlFencedRow] == nil && isStale && stale.Floor == tokB && r.final[sqlFencedRow] == want)

	lost := r.readA[sqlUnfencedRow] + depositA
	check(rep, claimSQLUnfencedLost,
		fmt.Sprintf("both UPDATEs commit; final balance %d (A's stale %d+%d), B's +%d gone", lost, r.readA[sqlUnfencedRow], depositA, depositB),
		fmt.Sprintf("B's write %s, A's late write %s; final balance %d", sqlVerdict(r.writeB[sqlUnfencedRow]), sqlVerdict(r.writeA[sqlUnfencedRow]), r.final[sqlUnfencedRow]),
		r.writeB[sqlUnfencedRow] == nil && r.writeA[sqlUnfencedRow] == nil && r.final[sqlUnfencedRow] == lost)

	check(rep, claimSQLFloorIsNewToken,
		fmt.Sprintf("floor of %s = %d (B's token)", sqlScope, tokB),
		fmt.Sprintf("floor of %s = %d", sqlScope, r.floor),
		r.floor == tokB)

	serial := strconv.Itoa(initialBalance + depositA + depositB)
	rows := [][]string{}
	for _, row := range sqlRows {
		name := "without the check (plain UPDATE)"
		if row.id == sqlFencedRow {
			name = "with the fence check (sqlfence.Do)"
		}
		rows = append(rows, []string{name, strconv.FormatInt(r.readA[row.id], 10), sqlVerdict(r.writeB[row.id]), sqlVerdict(r.writeA[row.id]), strconv.FormatInt(r.final[row.id], 10), serial})
	}
	rep.AddTable(report.Table{
		Title:   fmt.Sprintf("The balance in %s (starts at 100; A deposits 50, B deposits 30)", r.where),
		Columns: []string{"row", "A read", "B's write", "A's late write", "final", "correct if serial"},
		Rows:    rows,
	})
	rep.Note("The check is one statement, the first of the transaction: UPDATE fence SET token = $tok, writes = writes + 1 WHERE scope = $scope AND token <= $tok. No row affected with the row present: stale, roll back. See docs/fencing.md, \"Fencing your own database\".")
	rep.Note("From a shell: 'coordctl lock NAME -- coordctl sql --driver D --dsn DSN -e \"UPDATE ...\"' runs the same check with the token coordctl lock gives its child, and exits 5 when it is stale.")

	r.rec.Heading("What happened")
	r.rec.Explain(fmt.Sprintf(`  etcd did its job: A's lease expired and B got the lock with a larger token
  (A: %d, B: %d). But A, frozen, could not know, and sent its UPDATE anyway.
  The database row written through the fence check refused it — the check
  and the write are one transaction, so nothing of A's committed — and kept
  B's balance %d. The row written without the check ends at %d: B's deposit
  is lost. Serially it would be %s.`, tokA, tokB, r.final[sqlFencedRow], r.final[sqlUnfencedRow], serial))
	rep.Timeline = r.rec.Timeline()
	rep.Steps = r.rec.Steps()
}

// readBalancesA is A's read of every row, through the pool.
func (r *sqlRun) readBalancesA(ctx context.Context) error {
	r.readA = map[int]int64{}
	for _, row := range sqlRows {
		call := time.Now()
		v, err := r.balance(ctx, r.db, row.id)
		r.op("A", "SELECT "+row.name+" balance", call, err)
		if err != nil {
			return err
		}
		r.readA[row.id] = v
	}
	return nil
}

// depositB is B's deposit on every row with token tok: through the fence
// on the fenced row, plainly on the other.
func (r *sqlRun) depositB(ctx context.Context, tok fencing.Token) {
	r.writeB, r.writeA = map[int]error{}, map[int]error{}
	for _, row := range sqlRows {
		call := time.Now()
		err := r.deposit(ctx, row.id, row.id == sqlFencedRow, tok, func(tx *sql.Tx) (int64, error) {
			v, err := r.balance(ctx, tx, row.id)
			return v + depositB, err
		})
		r.op("B", fmt.Sprintf("%s: balance += %d (token %d)", row.name, depositB, tok), call, err)
		r.writeB[row.id] = err
	}
}

// lateWritesA is A's late UPDATE of every row with token tok: the balance
// it planned from its read.
func (r *sqlRun) lateWritesA(ctx context.Context, tok fencing.Token) {
	for _, row := range sqlRows {
		planned := r.readA[row.id] + depositA
		call := time.Now()
		err := r.deposit(ctx, row.id, row.id == sqlFencedRow, tok, func(*sql.Tx) (int64, error) { return planned, nil })
		r.op("A", fmt.Sprintf("late %s: balance = %d (token %d)", row.name, planned, tok), call, err)
		r.writeA[row.id] = err
	}
}

// finalBalances reads every row and the scope's floor at the end.
func (r *sqlRun) finalBalances(ctx context.Context) error {
	r.final = map[int]int64{}
	for _, row := range sqlRows {
		var err error
		if r.final[row.id], err = r.balance(ctx, r.db, row.id); err != nil {
			return err
		}
	}
	var err error
	r.floor, err = r.fence.Floor(ctx, sqlScope)
	return err
}

func sqlVerdict(err error) string {
	if err == nil {
		return "committed"
	}
	var stale *fencing.StaleError
	if errors.As(err, &stale) {
		return fmt.Sprintf("rejected (token %d < floor %d), rolled back", stale.Token, stale.Floor)
	}
	return "failed: " + shortErr(err)
}
