package pglock_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
	"github.com/coordkit/coordkit/internal/nettest"
	"github.com/coordkit/coordkit/internal/pglock"
)

// fresh returns the DSN of a fresh database (random name, dropped at the
// end: advisory locks are per database, so no other run sees ours).
func fresh(t *testing.T) string {
	t.Helper()
	return sqltest.Open(t, sqlfence.Postgres).DSN
}

func open(t *testing.T, dsn, name string, opts ...pglock.Option) *pglock.Lock {
	t.Helper()
	l, err := pglock.Open(context.Background(), dsn, name, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func admin(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pglock.Connect(context.Background(), dsn, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// The key is the documented hash, and the SQL in the package doc computes
// the same on the server.
func TestKeyIsTheDocumentedHash(t *testing.T) {
	require.Equal(t, int64(-0x35687eed35e44236), pglock.Key("a")) // sha256("a") = ca978112ca1bbdca...
	require.NotEqual(t, pglock.Key("a"), pglock.Key("b"))
	db := admin(t, fresh(t))
	for _, name := range []string{"a", "safety", "coordkit_bench_0123_x"} {
		var k int64
		require.NoError(t, db.QueryRow(context.Background(),
			`SELECT ('x' || left(encode(sha256(convert_to($1, 'UTF8')), 'hex'), 16))::bit(64)::bigint`, name).Scan(&k))
		require.Equal(t, pglock.Key(name), k, name)
	}
}

func TestInvalidAndUnreachable(t *testing.T) {
	_, err := pglock.Open(context.Background(), "postgres://127.0.0.1/x", "")
	require.ErrorIs(t, err, pglock.ErrInvalid)
	_, err = pglock.Open(context.Background(), "postgres://%zz", "n")
	require.ErrorIs(t, err, pglock.ErrInvalid)
	for _, what := range []string{"", "Upper", "dash-ed", "_x", "toolongtoolongtoolongtoolong"} {
		_, err := pglock.NewNamespace(what)
		require.ErrorIs(t, err, pglock.ErrInvalid, what)
	}
	a, err := pglock.NewNamespace("unit")
	require.NoError(t, err)
	b, err := pglock.NewNamespace("unit")
	require.NoError(t, err)
	require.NotEqual(t, a.Name("x"), b.Name("x"), "each run has its own names")
	require.ErrorIs(t, pglock.CreateSequence(context.Background(), nil, "bad name"), pglock.ErrInvalid)

	addr := nettest.ClosedAddr(t)
	_, err = pglock.Open(context.Background(), "postgres://root@"+addr+"/test?sslmode=disable", "n", pglock.WithDialTimeout(time.Second))
	require.ErrorIs(t, err, pglock.ErrUnreachable)
	require.Contains(t, err.Error(), addr)
	require.Contains(t, err.Error(), "connection refused")
	require.NotContains(t, err.Error(), "did not answer", "it answered at once: nothing listens there")
}

// A connection error says what happened: a server that accepts and says
// nothing did not answer in time; a server that answers with a refusal
// (no such database, no such role) is no unreachable server.
func TestConnectErrorsSayWhatHappened(t *testing.T) {
	silent := nettest.Silent(t)
	_, err := pglock.Connect(context.Background(), "postgres://root@"+silent+"/test?sslmode=disable", 500*time.Millisecond)
	require.ErrorIs(t, err, pglock.ErrUnreachable)
	require.Contains(t, err.Error(), silent+" did not answer within 500ms")

	dsn := fresh(t)
	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	where := net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
	for _, tc := range []struct{ what, dsn, says string }{
		{"no such database", strings.Replace(dsn, "/"+cfg.Database, "/"+cfg.Database+"_missing", 1), "does not exist"},
		{"no such role", strings.Replace(dsn, "://"+cfg.User+"@", "://coordkit_no_such_role@", 1), "coordkit_no_such_role"},
	} {
		_, err := pglock.Open(context.Background(), tc.dsn, "n")
		require.ErrorIs(t, err, pglock.ErrRefused, tc.what)
		require.NotErrorIs(t, err, pglock.ErrUnreachable, tc.what)
		require.Contains(t, err.Error(), where, tc.what)
		require.Contains(t, err.Error(), tc.says, tc.what)
		require.NotContains(t, err.Error(), "did not answer", tc.what)
	}
}

func TestExclusionTokensAndUnlock(t *testing.T) {
	dsn := fresh(t)
	ctx := context.Background()
	db := admin(t, dsn)
	require.NoError(t, pglock.CreateSequence(ctx, db, "tokens"))
	a := open(t, dsn, "x", pglock.WithKeepalive(pglock.DefaultKeepalive))
	b := open(t, dsn, "x")
	require.Equal(t, pglock.Key("x"), a.Key())
	require.NotZero(t, a.PID())

	_, err := a.Token(ctx, "tokens")
	require.ErrorIs(t, err, pglock.ErrNotHeld)
	require.ErrorIs(t, a.Unlock(ctx), pglock.ErrNotHeld)
	require.False(t, a.Alive())

	require.NoError(t, a.Lock(ctx))
	require.True(t, a.Alive())
	require.ErrorIs(t, a.Lock(ctx), pglock.ErrHeld, "the server would stack it")
	ok, err := b.TryLock(ctx)
	require.NoError(t, err)
	require.False(t, ok, "held by a")
	t1, err := a.Token(ctx, "tokens")
	require.NoError(t, err)
	require.NoError(t, a.Unlock(ctx))
	require.ErrorIs(t, a.Unlock(ctx), pglock.ErrNotHeld)

	ok, err = b.TryLock(ctx)
	require.NoError(t, err)
	require.True(t, ok, "free again")
	t2, err := b.Token(ctx, "tokens")
	require.NoError(t, err)
	require.Greater(t, t2, t1, "a later holder's token is larger")
	require.NoError(t, b.Unlock(ctx))

	var idle int
	require.NoError(t, a.Lock(ctx))
	require.NoError(t, db.QueryRow(ctx,
		"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", int32(a.PID())).Scan(&idle))
	require.Equal(t, 1, idle, "the lock is the lock connection's session's")
	require.NoError(t, pglock.DropSequence(ctx, db, "tokens"))
}

// A waiter blocks in pg_advisory_lock and the server wakes it on release.
func TestBlockingHandoff(t *testing.T) {
	dsn := fresh(t)
	ctx := context.Background()
	db := admin(t, dsn)
	a := open(t, dsn, "h")
	b := open(t, dsn, "h")
	require.NoError(t, a.Lock(ctx))
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx) }()
	waitWaiting(t, db, a.Key())
	select {
	case err := <-got:
		t.Fatalf("b got the lock while a held it: %v", err)
	default:
	}
	require.NoError(t, a.Unlock(ctx))
	require.NoError(t, <-got)
	require.True(t, b.Alive())
	require.NoError(t, b.Unlock(ctx))
}

// Closing the lock connection (a process that exits) releases the lock.
func TestCloseReleases(t *testing.T) {
	dsn := fresh(t)
	ctx := context.Background()
	db := admin(t, dsn)
	a := open(t, dsn, "c")
	b := open(t, dsn, "c")
	require.NoError(t, a.Lock(ctx))
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx) }()
	waitWaiting(t, db, a.Key())
	require.NoError(t, a.Close())
	require.NoError(t, <-got)
	require.ErrorIs(t, a.Lock(ctx), pglock.ErrClosed)
}

// The failure mode this package exists to show: the server ends the
// holder's session (as after its keepalives gave up on a partitioned
// client), the next holder is granted the lock, and the old holder still
// believes it holds until it next uses its lock connection.
func TestServerEndedSessionHolderStillBelieves(t *testing.T) {
	dsn := fresh(t)
	ctx := context.Background()
	db := admin(t, dsn)
	require.NoError(t, pglock.CreateSequence(ctx, db, "tokens"))
	a := open(t, dsn, "p")
	b := open(t, dsn, "p")
	require.NoError(t, a.Lock(ctx))
	ta, err := a.Token(ctx, "tokens")
	require.NoError(t, err)
	require.NoError(t, pglock.Terminate(ctx, db, a.PID()))
	require.NoError(t, b.Lock(ctx), "the server released a's lock")
	tb, err := b.Token(ctx, "tokens")
	require.NoError(t, err)
	require.Greater(t, tb, ta)
	require.True(t, a.Alive(), "a has not used its connection: it still believes")
	_, err = a.Token(ctx, "tokens")
	require.Error(t, err, "a token is taken on the lock connection: a dead session gets none")
	require.False(t, a.Alive())
}

// A canceled Lock closes the connection: the server might have granted it
// as the cancel arrived, and a closed session holds nothing.
func TestCanceledLockClosesTheConnection(t *testing.T) {
	dsn := fresh(t)
	db := admin(t, dsn)
	a := open(t, dsn, "k")
	b := open(t, dsn, "k")
	require.NoError(t, a.Lock(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx) }()
	waitWaiting(t, db, a.Key())
	cancel()
	err := <-got
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, b.Lock(context.Background()), pglock.ErrClosed)
	require.True(t, a.Alive())
	require.NoError(t, a.Unlock(context.Background()))
}

// Close during a blocked Lock ends it.
func TestCloseEndsABlockedLock(t *testing.T) {
	dsn := fresh(t)
	db := admin(t, dsn)
	a := open(t, dsn, "b")
	b := open(t, dsn, "b")
	require.NoError(t, a.Lock(context.Background()))
	got := make(chan error, 1)
	go func() { got <- b.Lock(context.Background()) }()
	waitWaiting(t, db, a.Key())
	require.NoError(t, b.Close())
	require.Error(t, <-got)
	ok, err := a.TryLock(context.Background())
	require.ErrorIs(t, err, pglock.ErrHeld)
	require.False(t, ok)
}

func waitWaiting(t *testing.T, db *pgx.Conn, key int64) {
	t.Helper()
	for {
		g, w, err := pglock.Sessions(context.Background(), db, key)
		require.NoError(t, err)
		require.Equal(t, 1, g, "one holder")
		if w > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond) // pg_locks has no event to wait on
	}
}

// LockWithin gives up after its bound while another session holds the key;
// WithVia dials the given address instead of the DSN's host (here the
// server itself behind a DSN naming a closed port); Holding reports the
// lock as coordctl check pg-advisory-lock prints it.
func TestLockWithinViaAndHolding(t *testing.T) {
	dsn := fresh(t)
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	server := net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
	closed := strings.Replace(dsn, server, "127.0.0.1:1", 1)
	require.NotEqual(t, dsn, closed, "the DSN names %s", server)
	a := open(t, closed, "w", pglock.WithVia(server), pglock.WithKeepalive(pglock.DefaultKeepalive))
	b := open(t, dsn, "w")
	require.NoError(t, a.LockWithin(ctx, 0))
	err = b.LockWithin(ctx, 200*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded, "b waited past its bound while a held")
	h := a.Holding(7)
	require.Equal(t, pglock.Holding{Name: "w", Key: pglock.Key("w"), PID: a.PID(), Token: 7}, h)
	var sb strings.Builder
	require.NoError(t, h.WriteSimple(&sb))
	require.Equal(t, fmt.Sprintf("holding w (key %d, server pid %d, token 7)\n", pglock.Key("w"), a.PID()), sb.String())
}
