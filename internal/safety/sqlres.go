package safety

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql" // driver "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	_ "modernc.org/sqlite"             // driver "sqlite"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/fencing/sqlfence"
)

// ErrDatabaseUnreachable is returned by Run when the SQL database of
// ResourceSQL does not answer within the dial timeout.
var ErrDatabaseUnreachable = errors.New("safety: database unreachable")

// sqlResource keeps each slot's counter in a row of a SQL table, in tables
// named with a random per-run prefix that Close drops:
//
//	<p>_counter (k, v, id)            one row per slot
//	<p>_seq (n)                        one row: the log's sequence
//	<p>_log (seq, k, token, scope, v, id)  every committed write
//	<p>_fence                          sqlfence's table (fenced mode)
//
// A write is one transaction: (fenced) sqlfence's check, then the
// sequence's increment (its row lock orders the writes of every slot by
// commit), the counter's update and the log's insert.
type sqlResource struct {
	db       *sql.DB
	dialect  sqlfence.Dialect
	fence    *sqlfence.Fence // nil when unfenced
	prefix   string
	rejected atomic.Int64
	slots    int
	dsn      string // as opened: for SQLite, SQLiteDSN(path)
	path     string // SQLite: the database file (the run's own)
}

func openSQLResource(ctx context.Context, cfg Config) (*sqlResource, error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	r, err := dialSQLResource(ctx, cfg, "coordkit_safety_"+hex.EncodeToString(b))
	if err != nil {
		return nil, err
	}
	if err := r.create(ctx); err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

// dialSQLResource opens the resource of cfg's database whose tables are
// under prefix, without creating them.
func dialSQLResource(ctx context.Context, cfg Config, prefix string) (*sqlResource, error) {
	d, err := sqlfence.ParseDialect(cfg.SQLDriver)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	dsn, path := cfg.SQLDSN, ""
	if dsn == "" && d == sqlfence.SQLite {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, err
		}
		path = filepath.Join(cfg.DataDir, "resource.db")
		dsn = sqlfence.SQLiteDSN(path)
	}
	db, err := sql.Open(d.DriverName(), dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.dialTimeout())
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("%w (%s): %w", ErrDatabaseUnreachable, d, err)
	}
	r := &sqlResource{db: db, dialect: d, prefix: prefix, slots: cfg.limit(), dsn: dsn, path: path}
	if cfg.Fencing {
		if r.fence, err = sqlfence.New(db, d, sqlfence.WithTable(r.prefix+"_fence")); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	return r, nil
}

func (r *sqlResource) rebind(q string) string {
	if r.dialect != sqlfence.Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (r *sqlResource) create(ctx context.Context) error {
	p := r.prefix
	stmts := []string{
		"CREATE TABLE " + p + "_counter (k VARCHAR(64) NOT NULL PRIMARY KEY, v BIGINT NOT NULL, id VARCHAR(64) NOT NULL)",
		"CREATE TABLE " + p + "_seq (one INTEGER NOT NULL PRIMARY KEY, n BIGINT NOT NULL)",
		"CREATE TABLE " + p + "_log (seq BIGINT NOT NULL PRIMARY KEY, k VARCHAR(64) NOT NULL, token BIGINT NOT NULL, scope VARCHAR(255) NOT NULL, v BIGINT NOT NULL, id VARCHAR(64) NOT NULL)",
		"INSERT INTO " + p + "_seq (one, n) VALUES (1, 0)",
	}
	for i := 0; i < r.slots; i++ {
		stmts = append(stmts, "INSERT INTO "+p+"_counter (k, v, id) VALUES ('"+slotKey(i)+"', 0, '')")
	}
	for _, s := range stmts {
		if _, err := r.db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("safety: set up the sql resource: %w", err)
		}
	}
	return nil
}

func (r *sqlResource) Fence(ctx context.Context, scope string, token uint64) error {
	if r.fence == nil {
		return nil
	}
	err := r.fence.Fence(ctx, scope, fencing.Token(token))
	if errors.Is(err, fencing.ErrStale) {
		r.rejected.Add(1)
	}
	return err
}

func (r *sqlResource) Read(ctx context.Context, slot int) (int, uint64, error) {
	var v int64
	err := r.db.QueryRowContext(ctx, r.rebind("SELECT v FROM "+r.prefix+"_counter WHERE k = ?"), slotKey(slot)).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, nil
	}
	return int(v), 0, err
}

func (r *sqlResource) Write(ctx context.Context, slot, value int, id string, token uint64, scope string, _ uint64) error {
	write := func(tx *sql.Tx) error {
		p := r.prefix
		if _, err := tx.ExecContext(ctx, "UPDATE "+p+"_seq SET n = n + 1 WHERE one = 1"); err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRowContext(ctx, "SELECT n FROM "+p+"_seq WHERE one = 1").Scan(&seq); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, r.rebind("UPDATE "+p+"_counter SET v = ?, id = ? WHERE k = ?"), value, id, slotKey(slot)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, r.rebind("INSERT INTO "+p+"_log (seq, k, token, scope, v, id) VALUES (?, ?, ?, ?, ?, ?)"),
			seq, slotKey(slot), int64(token), scope, value, id)
		return err
	}
	if r.fence != nil {
		err := r.fence.Do(ctx, scope, fencing.Token(token), write)
		if errors.Is(err, fencing.ErrStale) {
			r.rejected.Add(1)
		}
		return err
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

// Outcome: stale, or unknown for any other error (a failed commit may
// have committed; the log decides).
func (r *sqlResource) Outcome(err error) Outcome {
	switch {
	case err == nil:
		return OK
	case errors.Is(err, fencing.ErrStale):
		return Stale
	}
	return Unknown
}

func (r *sqlResource) Log(ctx context.Context) ([]Write, int, error) {
	rows, err := r.db.QueryContext(ctx, "SELECT seq, k, token, v, id FROM "+r.prefix+"_log ORDER BY seq")
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []Write
	for rows.Next() {
		var seq, token, v int64
		var k, id string
		if err := rows.Scan(&seq, &k, &token, &v, &id); err != nil {
			return nil, 0, err
		}
		slot, _ := slotOfKey(k)
		out = append(out, Write{Seq: uint64(seq), Token: uint64(token), Value: int(v), ID: id, Slot: slot})
	}
	return out, int(r.rejected.Load()), rows.Err()
}

// Close drops the run's tables and closes the database.
func (r *sqlResource) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, t := range []string{"_counter", "_seq", "_log", "_fence"} {
		_, _ = r.db.ExecContext(ctx, "DROP TABLE IF EXISTS "+r.prefix+t)
	}
	return r.db.Close()
}
