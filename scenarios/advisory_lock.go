package scenarios

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/scenarios/report"
)

// The claims of advisory-lock.
const (
	claimAdvTwoHolders ClaimID = "advisory-two-holders-after-cut"
	claimAdvTokens     ClaimID = "advisory-sequence-tokens-grow"
	claimAdvLost       ClaimID = "advisory-unfenced-lost-update"
	claimAdvFenced     ClaimID = "advisory-fence-refuses-late-update"
)

// Keepalives the scenario sets on A's lock connection (server side), and
// so the bound it states: a cut connection is given up after idle +
// interval × count.
const (
	advKeepIdle     = 2
	advKeepInterval = 1
	advKeepCount    = 2
)

func advisoryLock() Scenario {
	return Scenario{
		Name: "advisory-lock",
		Summary: "A PostgreSQL advisory lock (pg_advisory_lock on a dedicated lock connection, writes through a pool) whose lock connection is cut: " +
			"the server ends the session and grants the lock to B while A still believes it holds; A's late UPDATE loses B's deposit, " +
			"unless A took a sequence token on its lock connection and wrote through sqlfence. Needs PostgreSQL (Env.SQLDriver postgres, Env.SQLDSN); skipped without.",
		Claims: []Claim{
			{ID: claimAdvTwoHolders, Kind: Safety, Text: "once the server ended A's session (its keepalives gave up on the cut connection), B is granted the lock while A, which has not used its lock connection since, still believes it holds: two holders"},
			{ID: claimAdvTokens, Kind: Safety, Text: "a token taken with nextval on the lock connection after acquiring grows from holder to holder: B's is larger than A's"},
			{ID: claimAdvLost, Kind: Safety, Text: "without a fence A's late UPDATE commits and B's deposit is lost"},
			{ID: claimAdvFenced, Kind: Safety, Text: "with A's sequence token checked by sqlfence in the same transaction, A's late UPDATE is refused as stale and B's deposit stays"},
		},
		Run: runAdvisoryLock,
	}
}

// advisoryKey is name's advisory-lock key: the first 8 bytes of
// SHA-256(name), big-endian, as a signed int64 (the hash coordctl's bench
// and check use, internal/pglock).
func advisoryKey(name string) int64 {
	sum := sha256.Sum256([]byte(name))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// advRun is one run of advisory-lock on top of fenced-sql's tables.
type advRun struct {
	*sqlRun
	dsn          string
	seq          string
	key          int64
	lockA, lockB *pgx.Conn
	pidA         uint32
	tokA, tokB   fencing.Token
	grantedB     bool
	believesA    bool // A's lock connection not known closed when B was granted
	learnedA     error
}

func runAdvisoryLock(ctx context.Context, env Env) (*report.Report, error) {
	d, err := env.sqlDialect()
	if err != nil {
		return nil, err
	}
	if d != sqlfence.Postgres {
		return nil, fmt.Errorf("%w: advisory-lock needs a PostgreSQL database: run it with --driver postgres --dsn DSN (Env.SQLDriver and Env.SQLDSN)", ErrSkipped)
	}
	r := &advRun{sqlRun: &sqlRun{env: env, rep: report.New("advisory-lock", ""), rec: report.NewRecorder(nil)}, dsn: env.SQLDSN}
	defer r.close()
	r.rec.Heading("An advisory lock, a SQL database, and a cut lock connection")
	if err := r.setupDB(ctx); err != nil {
		return nil, err
	}
	r.seq = r.account[:len(r.account)-len("_account")] + "_tokens"
	r.key = advisoryKey(r.seq)
	if _, err := r.db.ExecContext(ctx, "CREATE SEQUENCE "+r.seq); err != nil {
		return nil, fmt.Errorf("create sequence %s: %w", r.seq, err)
	}
	r.closers = append(r.closers, func() {
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = r.db.ExecContext(dctx, "DROP SEQUENCE IF EXISTS "+r.seq)
	})
	for _, c := range []**pgx.Conn{&r.lockA, &r.lockB} {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		conn, err := pgx.Connect(cctx, r.dsn)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("open a lock connection: %w", err)
		}
		*c = conn
		r.closers = append(r.closers, func() { _ = conn.Close(context.Background()) })
	}
	if _, err := r.lockA.Exec(ctx, fmt.Sprintf("SET tcp_keepalives_idle = %d; SET tcp_keepalives_interval = %d; SET tcp_keepalives_count = %d",
		advKeepIdle, advKeepInterval, advKeepCount), pgx.QueryExecModeSimpleProtocol); err != nil {
		return nil, fmt.Errorf("set keepalives: %w", err)
	}
	r.pidA = r.lockA.PgConn().PID()
	r.rec.Step("database", "setup", fmt.Sprintf("lock key %d (SHA-256 of %s); token sequence %s; A's and B's lock connections, A's with tcp_keepalives_idle=%ds, interval=%ds, count=%d",
		r.key, r.seq, r.seq, advKeepIdle, advKeepInterval, advKeepCount), 0)
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := r.act(actx); err != nil {
		return nil, err
	}
	r.judge()
	return r.rep, nil
}

// lockAndToken takes the advisory lock on conn and a token on it.
func (r *advRun) lockAndToken(ctx context.Context, who string, conn *pgx.Conn) (fencing.Token, error) {
	call := time.Now()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", r.key); err != nil {
		r.op(who, "pg_advisory_lock", call, err)
		return 0, err
	}
	var n int64
	err := conn.QueryRow(ctx, "SELECT nextval($1::regclass)", r.seq).Scan(&n)
	r.op(who, "pg_advisory_lock, then nextval on the lock connection → token "+strconv.FormatInt(n, 10), call, err)
	return fencing.Token(n), err
}

func (r *advRun) act(ctx context.Context) error {
	r.env.Progressf("advisory-lock: A takes the lock and its lock connection is cut")
	r.rec.Heading("1. A takes the lock, reads the balances; its lock connection is cut")
	r.rec.State("A", report.StateIdle)
	r.rec.State("B", report.StateIdle)
	var err error
	if r.tokA, err = r.lockAndToken(ctx, "A", r.lockA); err != nil {
		return fmt.Errorf("lock by A: %w", err)
	}
	r.rec.State("A", report.StateHolder)
	r.rec.Step("A", "acquired", fmt.Sprintf("holds the advisory lock on its lock connection (server pid %d), token %d", r.pidA, r.tokA), uint64(r.tokA))
	if err := r.readBalancesA(ctx); err != nil {
		return err
	}
	r.rec.Step("A", "read", fmt.Sprintf("reads balance=%d through its pool and plans UPDATE ... SET balance = %d", r.readA[sqlFencedRow], r.readA[sqlFencedRow]+depositA), uint64(r.tokA))
	r.rec.FaultStart("A's lock connection cut")
	r.rec.State("A", report.StatePaused)
	// What the server does when its keepalives give up on the cut
	// connection, without waiting for them: the test has no network to
	// cut, and a proxy's kernel would answer the probes.
	call := time.Now()
	var ended bool
	err = r.db.QueryRowContext(ctx, "SELECT pg_terminate_backend($1, 5000)", int32(r.pidA)).Scan(&ended)
	if err == nil && !ended {
		err = errors.New("the session did not end within 5s")
	}
	r.op("server", fmt.Sprintf("ends A's session (pid %d), as after %ds + %d×%ds of unanswered keepalives", r.pidA, advKeepIdle, advKeepCount, advKeepInterval), call, err)
	if err != nil {
		return err
	}
	r.rec.Step("server", "released", fmt.Sprintf("A's connection is cut; after tcp_keepalives_idle + count × interval = %ds of silence the server ends the session (here at once, with pg_terminate_backend), and with it the lock", advKeepIdle+advKeepCount*advKeepInterval), 0)

	r.env.Progressf("advisory-lock: B takes the lock")
	r.rec.Heading("2. The server grants the lock to B; A still believes it holds")
	r.rec.State("B", report.StateWaiting)
	if r.tokB, err = r.lockAndToken(ctx, "B", r.lockB); err != nil {
		return fmt.Errorf("lock by B: %w", err)
	}
	r.grantedB = true
	r.believesA = !r.lockA.IsClosed()
	r.rec.State("B", report.StateHolder)
	r.rec.Step("B", "acquired", fmt.Sprintf("holds the lock with token %d; A's lock connection is closed as far as A knows: %t", r.tokB, !r.believesA), uint64(r.tokB))
	r.depositB(ctx, r.tokB)
	r.rec.Step("B", "write", fmt.Sprintf("writes balance=%d: %s through the fence, %s without it",
		initialBalance+depositB, sqlVerdict(r.writeB[sqlFencedRow]), sqlVerdict(r.writeB[sqlUnfencedRow])), uint64(r.tokB))

	r.env.Progressf("advisory-lock: A sends its UPDATE")
	r.rec.Heading("3. A, still believing, sends the UPDATE it planned through its pool")
	r.rec.FaultEnd("A's lock connection cut")
	r.rec.State("A", report.StateHolder)
	r.lateWritesA(ctx, r.tokA)
	call = time.Now()
	_, r.learnedA = r.lockA.Exec(ctx, "SELECT pg_advisory_unlock($1)", r.key)
	r.op("A", "pg_advisory_unlock on its lock connection: only now does it learn", call, r.learnedA)
	r.rec.State("A", report.StateIdle)
	if _, err := r.lockB.Exec(ctx, "SELECT pg_advisory_unlock($1)", r.key); err != nil {
		return fmt.Errorf("unlock by B: %w", err)
	}
	r.rec.State("B", report.StateIdle)
	return r.finalBalances(ctx)
}

func (r *advRun) judge() {
	rep := r.rep
	rep.Metric("token_a", float64(r.tokA), "")
	rep.Metric("token_b", float64(r.tokB), "")
	rep.Metric("keepalive_bound_s", float64(advKeepIdle+advKeepCount*advKeepInterval), "s")
	rep.Metric("floor_after", float64(r.floor), "")

	check(rep, claimAdvTwoHolders,
		"B is granted the lock; A's lock connection is not known closed to A (it has not used it)",
		fmt.Sprintf("B granted: %t; A still believes it holds: %t; A learned on its next use of the lock connection: %s", r.grantedB, r.believesA, sqlVerdict(r.learnedA)),
		r.grantedB && r.believesA && r.learnedA != nil)
	check(rep, claimAdvTokens,
		"token B > token A",
		fmt.Sprintf("A=%d, B=%d", r.tokA, r.tokB),
		r.tokB > r.tokA)
	lost := r.readA[sqlUnfencedRow] + depositA
	check(rep, claimAdvLost,
		fmt.Sprintf("both UPDATEs commit; final balance %d, B's +%d gone", lost, depositB),
		fmt.Sprintf("B's write %s, A's late write %s; final balance %d", sqlVerdict(r.writeB[sqlUnfencedRow]), sqlVerdict(r.writeA[sqlUnfencedRow]), r.final[sqlUnfencedRow]),
		r.writeB[sqlUnfencedRow] == nil && r.writeA[sqlUnfencedRow] == nil && r.final[sqlUnfencedRow] == lost)
	var stale *fencing.StaleError
	isStale := errors.As(r.writeA[sqlFencedRow], &stale)
	want := int64(initialBalance + depositB)
	check(rep, claimAdvFenced,
		fmt.Sprintf("A's token %d < floor %d: rejected as stale; the row keeps B's balance %d", r.tokA, r.tokB, want),
		fmt.Sprintf("B's write %s, A's late write %s; final balance %d", sqlVerdict(r.writeB[sqlFencedRow]), sqlVerdict(r.writeA[sqlFencedRow]), r.final[sqlFencedRow]),
		r.writeB[sqlFencedRow] == nil && isStale && stale.Floor == r.tokB && r.final[sqlFencedRow] == want)

	serial := strconv.Itoa(initialBalance + depositA + depositB)
	var rows [][]string
	for _, row := range sqlRows {
		name := "without a fence (plain UPDATE)"
		if row.id == sqlFencedRow {
			name = "with the sequence token through sqlfence.Do"
		}
		rows = append(rows, []string{name, strconv.FormatInt(r.readA[row.id], 10), sqlVerdict(r.writeB[row.id]), sqlVerdict(r.writeA[row.id]), strconv.FormatInt(r.final[row.id], 10), serial})
	}
	rep.AddTable(report.Table{
		Title:   "The balance in PostgreSQL (starts at 100; A deposits 50, B deposits 30)",
		Columns: []string{"row", "A read", "B's write", "A's late write", "final", "correct if serial"},
		Rows:    rows,
	})
	rep.Note("The advisory lock lives in the memory of one PostgreSQL server, on A's session: not replicated, gone with the session. The server ends a session whose client went silent only when its TCP keepalives give up (tcp_keepalives_idle + count × interval; the defaults follow the OS, two hours and more); a frozen client whose kernel still answers keeps the lock.")
	rep.Note("The token is nextval on the lock connection itself: it is taken only while the session, and so the lock, lives, so a later holder's is larger. 'coordctl check lock-safety --lock pg-advisory --dsn DSN' runs the same under a nemesis; docs/safety.md.")
	r.rec.Heading("What happened")
	r.rec.Explain(fmt.Sprintf(`  The server did its job: it released the lock when A's session ended and gave
  it to B. A, writing through other connections, could not know until it next
  used its lock connection. The row written through sqlfence with the sequence
  token refused A's UPDATE (token %d < floor %d) and kept B's balance %d. The
  row written without it ends at %d: B's deposit is lost. Serially it would be %s.`,
		r.tokA, r.tokB, r.final[sqlFencedRow], r.final[sqlUnfencedRow], serial))
	rep.Timeline = r.rec.Timeline()
	rep.Steps = r.rec.Steps()
}
