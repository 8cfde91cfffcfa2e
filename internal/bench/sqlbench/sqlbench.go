// Package sqlbench measures what the fence check of fencing/sqlfence costs
// in a real database: the same small transaction (one UPDATE of a business
// row) with the check first (sqlfence.Fence.Do; the token equals the
// floor, so the shared check; with Options.Recheck also the re-check
// before COMMIT) and without it (BEGIN, UPDATE, COMMIT), side by side in one run, on SQLite,
// PostgreSQL or MySQL/MariaDB.
//
// Three loads: one writer in sequence; Writers concurrent writers, each on
// its own scope and its own row (distinct); Writers concurrent writers on
// one scope and one row (shared: the fence row and the business row are
// both contended; every writer presents the same token, so none is refused
// and the figure is the cost of the check's row lock). Each load runs in
// Rounds rounds that alternate which implementation goes first, so drift
// in the machine's load falls on both columns.
//
// Run works in two tables with random names (coordkit_bench_<hex>_rows and
// _fence) in the database the DSN names and drops them at the end; with
// SQLite and no DSN, in a file in a temporary directory it removes. After
// the run it checks that the business rows count exactly the transactions
// that committed. The figures depend on the machine and the server; compare
// the two columns of one run.
package sqlbench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	_ "github.com/go-sql-driver/mysql" // driver "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	_ "modernc.org/sqlite"             // driver "sqlite"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/internal/bench"
)

// Errors of Run.
var (
	// ErrOptions is returned by Run for options it cannot run with.
	ErrOptions = errors.New("sqlbench: invalid options")
	// ErrCount is returned when the business rows do not count the
	// transactions that committed: a lost or phantom write.
	ErrCount = errors.New("sqlbench: row counts differ from committed transactions")
)

// Options bound a run.
type Options struct {
	// Driver is sqlite, postgres or mysql (names sqlfence.ParseDialect takes).
	Driver string
	// DSN is the driver's data source name; a SQLite one (a path or a
	// file: URI) goes through sqlfence.NormalizeDSN first, which makes
	// transactions IMMEDIATE. Empty with SQLite: a file in a temporary
	// directory.
	DSN string
	// Iterations is the number of transactions of the sequential writer, per
	// implementation.
	Iterations int
	// PerWriter is the number of transactions of each concurrent writer, per
	// implementation and load.
	PerWriter int
	// Writers is the number of concurrent writers, 2..64.
	Writers int
	// Rounds splits each load into rounds alternating which implementation
	// goes first (default 2 when zero).
	Rounds int
	// Fence is how the fenced side runs its transaction: "do"
	// (sqlfence.Fence.Do, database/sql's Tx; the default when empty),
	// "doconn" (sqlfence.Fence.DoConn: BEGIN sent with the check), or
	// "both": Do in the fenced column, DoConn in fenced_conn, side by side.
	Fence string
	// Recheck makes the fenced sides read the fence row again before
	// COMMIT (sqlfence.WithRecheck, as 'coordctl sql' does).
	Recheck bool
	// Progress receives one line per step ("bench sql: ..."); nil discards.
	Progress io.Writer
}

// The values of Options.Fence.
const (
	FenceDo     = "do"
	FenceDoConn = "doconn"
	FenceBoth   = "both"
)

// Validate reports the first option Run cannot use, wrapping ErrOptions.
func (o Options) Validate() error {
	if _, err := sqlfence.ParseDialect(o.Driver); err != nil {
		return fmt.Errorf("%w: driver %q: want sqlite, postgres or mysql", ErrOptions, o.Driver)
	}
	d, _ := sqlfence.ParseDialect(o.Driver)
	if o.DSN != "" {
		if _, err := sqlfence.NormalizeDSN(d, o.DSN); err != nil {
			return fmt.Errorf("%w: dsn: %v", ErrOptions, err)
		}
	}
	switch {
	case o.Fence != "" && o.Fence != FenceDo && o.Fence != FenceDoConn && o.Fence != FenceBoth:
		return fmt.Errorf("%w: fence %q: want %s, %s or %s", ErrOptions, o.Fence, FenceDo, FenceDoConn, FenceBoth)
	case d != sqlfence.SQLite && o.DSN == "":
		return fmt.Errorf("%w: driver %s needs a DSN", ErrOptions, d)
	case o.Iterations < 1:
		return fmt.Errorf("%w: iterations %d: must be positive", ErrOptions, o.Iterations)
	case o.PerWriter < 1:
		return fmt.Errorf("%w: per-writer %d: must be positive", ErrOptions, o.PerWriter)
	case o.Writers < 2 || o.Writers > 64:
		return fmt.Errorf("%w: writers %d: want 2..64", ErrOptions, o.Writers)
	case o.Rounds < 0 || o.Rounds > o.Iterations || o.Rounds > o.PerWriter:
		return fmt.Errorf("%w: rounds %d: want 0..min(iterations, per-writer)", ErrOptions, o.Rounds)
	}
	return nil
}

// Row is one metric measured with and without the fence check.
type Row struct {
	Metric string  `json:"metric"`
	Fenced float64 `json:"fenced"`
	// FencedConn is DoConn's figure when the run measured both.
	FencedConn float64 `json:"fenced_conn,omitempty"`
	Unfenced   float64 `json:"unfenced"`
	Unit       string  `json:"unit"`
}

// Result is the outcome of a run; its JSON form is coordctl bench sql's
// -w json contract.
type Result struct {
	Benchmark string `json:"benchmark"` // "sql"
	Driver    string `json:"driver"`    // sqlite, postgres or mysql
	Server    string `json:"server"`    // the server's version string
	Writers   int    `json:"writers"`
	Fence     string `json:"fence"` // do, doconn or both
	Recheck   bool   `json:"recheck,omitempty"`
	Rows      []Row  `json:"rows"`
}

// Table is the result in the form every bench command prints: the ratio
// column is fenced/unfenced as is (above 1 for a latency: the check costs).
func (r Result) Table() bench.Table {
	t := bench.Table{
		Title:   fmt.Sprintf("sql benchmark: %s %s; one UPDATE per transaction, with and without the fence check (%s%s)", r.Driver, r.Server, fenceName(r.Fence), recheckName(r.Recheck)),
		Columns: []string{"fenced", "unfenced"},
		Ratios:  []bench.Ratio{{Of: "fenced", To: "unfenced", Plain: true}},
	}
	if r.Fence == FenceBoth {
		t.Columns = []string{"fenced", "fenced_conn", "unfenced"}
		t.Ratios = append(t.Ratios, bench.Ratio{Of: "fenced_conn", To: "unfenced", Plain: true})
	}
	for _, row := range r.Rows {
		if r.Fence == FenceBoth {
			t.Add(row.Metric, row.Unit, row.Fenced, row.FencedConn, row.Unfenced)
			continue
		}
		t.Add(row.Metric, row.Unit, row.Fenced, row.Unfenced)
	}
	return t
}

func fenceName(mode string) string {
	switch mode {
	case FenceDoConn:
		return "DoConn: BEGIN sent with the check"
	case FenceBoth:
		return "fenced: Do, database/sql's Tx; fenced_conn: DoConn, BEGIN sent with the check"
	}
	return "Do: database/sql's Tx"
}

func recheckName(on bool) string {
	if on {
		return "; WithRecheck: the fence row read again before COMMIT"
	}
	return ""
}

// The sides a load runs: the fenced ones (Do, DoConn) and unfenced.
const (
	sideDo = iota
	sideDoConn
	sideUnfenced
)

// Run measures both implementations on the database. It returns
// ErrOptions for invalid options, ErrCount if the rows' counts are off,
// and ctx's error, wrapped, when ctx ends first.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	if o.Rounds == 0 {
		o.Rounds = min(2, o.Iterations, o.PerWriter)
	}
	if o.Fence == "" {
		o.Fence = FenceDo
	}
	d, _ := sqlfence.ParseDialect(o.Driver)
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "bench sql: "+format+"\n", args...)
		}
	}
	dsn := o.DSN
	if dsn != "" {
		dsn, _ = sqlfence.NormalizeDSN(d, dsn) // Validate checked it
	} else {
		dir, err := os.MkdirTemp("", "coordctl-bench-sql-")
		if err != nil {
			return Result{}, err
		}
		defer os.RemoveAll(dir)
		dsn = sqlfence.SQLiteDSN(filepath.Join(dir, "bench.db"))
		progress("SQLite file in %s", dir)
	}
	e, err := open(ctx, d, dsn, o.Writers, o.Recheck)
	if err != nil {
		return Result{}, err
	}
	defer e.close()
	progress("%s %s: tables %s and %s (dropped at the end)", d, e.server, e.rows, e.fence.Table())

	res := Result{Benchmark: "sql", Driver: d.String(), Server: e.server, Writers: o.Writers, Fence: o.Fence, Recheck: o.Recheck}
	loads := []struct {
		name    string
		writers int
		n       int
		shared  bool
	}{
		{"sequential", 1, o.Iterations, false},
		{fmt.Sprintf("distinct_%d", o.Writers), o.Writers, o.PerWriter, false},
		{fmt.Sprintf("shared_%d", o.Writers), o.Writers, o.PerWriter, true},
	}
	sides := map[string][]int{FenceDo: {sideDo, sideUnfenced}, FenceDoConn: {sideDoConn, sideUnfenced},
		FenceBoth: {sideDo, sideDoConn, sideUnfenced}}[o.Fence]
	for _, l := range loads {
		progress("%s: %d writer(s) × %d transactions, fenced and unfenced, %d rounds", l.name, l.writers, l.n, o.Rounds)
		var lat [3][]time.Duration
		var wall [3]time.Duration
		for round := range o.Rounds {
			n := l.n / o.Rounds
			if round < l.n%o.Rounds {
				n++
			}
			for k := range sides {
				side := sides[(round+k)%len(sides)] // each side goes first in turn
				ds, w, err := e.load(ctx, side, l.writers, n, l.shared)
				if err != nil {
					return Result{}, fmt.Errorf("sqlbench: %s, %s: %w", l.name, []string{"fenced (Do)", "fenced (DoConn)", "unfenced"}[side], err)
				}
				lat[side] = append(lat[side], ds...)
				wall[side] += w
			}
		}
		fencedSide := sides[0]
		row := func(metric, unit string, f func(i int) float64) {
			r := Row{Metric: l.name + "_" + metric, Fenced: f(fencedSide), Unfenced: f(sideUnfenced), Unit: unit}
			if o.Fence == FenceBoth {
				r.FencedConn = f(sideDoConn)
			}
			res.Rows = append(res.Rows, r)
		}
		row("p50_ms", "ms", func(i int) float64 { return bench.Ms(bench.Percentile(lat[i], 0.50)) })
		row("p99_ms", "ms", func(i int) float64 { return bench.Ms(bench.Percentile(lat[i], 0.99)) })
		row("per_s", "per_s", func(i int) float64 { return float64(len(lat[i])) / wall[i].Seconds() })
	}
	if err := e.verify(ctx); err != nil {
		return Result{}, err
	}
	return res, nil
}

// env is an open database with the run's tables.
type env struct {
	dialect   sqlfence.Dialect
	db        *sql.DB
	fence     *sqlfence.Fence
	rows      string // the business table
	server    string
	update    string
	writers   int
	mu        sync.Mutex
	committed map[int]int64 // business row id → transactions committed
}

func (e *env) q(query string) string {
	if e.dialect != sqlfence.Postgres {
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

func open(ctx context.Context, d sqlfence.Dialect, dsn string, writers int, recheck bool) (*env, error) {
	db, err := sql.Open(d.DriverName(), dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlbench: open %s: %w", d, err)
	}
	db.SetMaxOpenConns(writers + 2)
	db.SetMaxIdleConns(writers + 2)
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		_ = db.Close()
		return nil, err
	}
	prefix := "coordkit_bench_" + hex.EncodeToString(b)
	e := &env{dialect: d, db: db, rows: prefix + "_rows", writers: writers, committed: map[int]int64{}}
	opts := []sqlfence.Option{sqlfence.WithTable(prefix + "_fence")}
	if recheck {
		opts = append(opts, sqlfence.WithRecheck())
	}
	if e.fence, err = sqlfence.New(db, d, opts...); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlbench: connect to %s: %w", d, err)
	}
	version := map[sqlfence.Dialect]string{sqlfence.Postgres: "SHOW server_version", sqlfence.MySQL: "SELECT VERSION()", sqlfence.SQLite: "SELECT sqlite_version()"}[d]
	if err := db.QueryRowContext(ctx, version).Scan(&e.server); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlbench: %s version: %w", d, err)
	}
	if err := e.create(ctx); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// create makes the business table with rows 0..writers (row writers is the
// shared one) and the fence rows of every scope, and warms a connection per
// writer.
func (e *env) create(ctx context.Context) error {
	if _, err := e.db.ExecContext(ctx, "CREATE TABLE "+e.rows+" (id INTEGER NOT NULL PRIMARY KEY, n BIGINT NOT NULL, body VARCHAR(64) NOT NULL)"); err != nil {
		return fmt.Errorf("sqlbench: create %s: %w", e.rows, err)
	}
	for id := 0; id <= e.writers; id++ {
		if _, err := e.db.ExecContext(ctx, e.q("INSERT INTO "+e.rows+" (id, n, body) VALUES (?, 0, '')"), id); err != nil {
			return fmt.Errorf("sqlbench: insert into %s: %w", e.rows, err)
		}
		if err := e.fence.Fence(ctx, scope(id, id == e.writers), 1); err != nil {
			return fmt.Errorf("sqlbench: fence: %w", err)
		}
	}
	e.update = e.q("UPDATE " + e.rows + " SET n = n + 1, body = ? WHERE id = ?")
	// Warm the pool: one connection per writer, with its statements.
	for _, side := range []int{sideDo, sideDoConn, sideUnfenced} {
		if _, _, err := e.load(ctx, side, e.writers, 2, false); err != nil {
			return fmt.Errorf("sqlbench: warm-up: %w", err)
		}
	}
	return nil
}

func scope(id int, shared bool) string {
	if shared {
		return "bench/shared"
	}
	return "bench/w" + strconv.Itoa(id)
}

// tx runs one transaction on business row id: with the fence check of
// scope first when fenced.
func (e *env) tx(ctx context.Context, side int, id int, scopeName string) error {
	write := func(tx sqlfence.Querier) error {
		_, err := tx.ExecContext(ctx, e.update, "w", id)
		return err
	}
	switch {
	case side == sideDoConn:
		return e.fence.DoConn(ctx, scopeName, fencing.Token(1), write)
	case side == sideDo:
		return e.fence.Do(ctx, scopeName, fencing.Token(1), func(tx *sql.Tx) error { return write(tx) })
	}
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := write(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// load runs writers concurrent writers of n transactions each and returns
// every transaction's latency and the load's wall time.
func (e *env) load(ctx context.Context, side int, writers, n int, shared bool) ([]time.Duration, time.Duration, error) {
	lat := make([][]time.Duration, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		id := w
		if shared {
			id = e.writers
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				t0 := time.Now()
				if err := e.tx(ctx, side, id, scope(id, shared)); err != nil {
					errs[w] = err
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
			e.mu.Lock()
			e.committed[id] += int64(n)
			e.mu.Unlock()
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return nil, 0, err
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	return all, wall, nil
}

// verify checks that each business row counts the transactions that
// committed on it.
func (e *env) verify(ctx context.Context) error {
	for id := 0; id <= e.writers; id++ {
		var n int64
		if err := e.db.QueryRowContext(ctx, e.q("SELECT n FROM "+e.rows+" WHERE id = ?"), id).Scan(&n); err != nil {
			return fmt.Errorf("sqlbench: verify: %w", err)
		}
		if n != e.committed[id] {
			return fmt.Errorf("%w: row %d has %d, %d committed", ErrCount, id, n, e.committed[id])
		}
	}
	return nil
}

// close drops the run's tables and closes the database.
func (e *env) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, t := range []string{e.rows, e.fence.Table()} {
		_, _ = e.db.ExecContext(ctx, "DROP TABLE IF EXISTS "+t)
	}
	_ = e.db.Close()
}
