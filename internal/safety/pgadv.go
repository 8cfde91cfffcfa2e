package safety

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/faultproxy"
	"github.com/coordkit/coordkit/internal/pglock"
	"github.com/coordkit/coordkit/session"
)

// LockPGAdvisory is a PostgreSQL session-level advisory lock
// (internal/pglock): each client holds it on its own lock connection,
// which goes through a fault proxy, and writes to the SQL resource in the
// same database through the resource's pool. Its token is nextval of a
// run's sequence taken on the lock connection after acquiring.
const LockPGAdvisory LockImpl = "pg-advisory"

// FaultCutLock cuts the holder's lock connection (both directions held in
// its proxy) while it works, its data connections untouched, and after the
// keepalive bound ends the connection's server process, as the server does
// when its keepalives give up: the lock is released on the server while
// the holder still believes it holds.
const FaultCutLock FaultKind = "cut-lock-conn"

// PGKeepalive are the keepalive settings of the check's lock connections.
var PGKeepalive = pglock.DefaultKeepalive

// validatePG checks what a pg-advisory run needs.
func (c Config) validatePG() error {
	switch {
	case c.lock() != LockPGAdvisory:
		return nil
	case c.Target != TargetLock || c.kind() != KindMutex:
		return fmt.Errorf("%w: pg-advisory is a mutex", ErrBadConfig)
	case c.resource() != ResourceSQL || c.SQLDriver != "postgres" || c.SQLDSN == "":
		return fmt.Errorf("%w: pg-advisory protects the SQL resource in its own PostgreSQL database: resource sql, driver postgres and a DSN", ErrBadConfig)
	case c.IfMatch:
		return fmt.Errorf("%w: pg-advisory runs unfenced or fenced", ErrBadConfig)
	}
	return nil
}

// pgKinds are the faults of a pg-advisory run.
func (c Config) pgKinds() []FaultKind {
	kinds := []FaultKind{FaultFreezeClient, FaultCutLock}
	if c.ProcessClients() {
		kinds = append(kinds, FaultSigstop)
	}
	return kinds
}

// pgLocks is a run's advisory lock: its name, its token sequence, and an
// admin connection (sequence, pg_terminate_backend).
type pgLocks struct {
	dsn    string
	target string // the server's host:port, behind each client's proxy
	name   string
	seq    string
	admin  *pgx.Conn
}

// openPGLocks connects and creates the run's token sequence.
func openPGLocks(ctx context.Context, cfg Config) (*pgLocks, error) {
	admin, err := pglock.Connect(ctx, cfg.SQLDSN, cfg.dialTimeout())
	if err != nil {
		return nil, fmt.Errorf("%w (postgres): %w", ErrDatabaseUnreachable, err)
	}
	ns, err := pglock.NewNamespace("safety")
	if err != nil {
		_ = admin.Close(ctx)
		return nil, err
	}
	pc := admin.Config()
	l := &pgLocks{dsn: cfg.SQLDSN, target: net.JoinHostPort(pc.Host, strconv.Itoa(int(pc.Port))),
		name: ns.Name("lock"), seq: ns.Name("tokens"), admin: admin}
	if err := pglock.CreateSequence(ctx, admin, l.seq); err != nil {
		_ = admin.Close(ctx)
		return nil, err
	}
	return l, nil
}

// Close drops the sequence and closes the admin connection.
func (l *pgLocks) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := pglock.DropSequence(ctx, l.admin, l.seq)
	_ = l.admin.Close(ctx)
	return err
}

// lockFor is the lockFactory: a client's lock, behind its own proxy.
func (l *pgLocks) lockFor(_ *clientv3.Client, _ int) (Lock, error) {
	p, err := faultproxy.NewPausable("127.0.0.1:0", l.target)
	if err != nil {
		return nil, err
	}
	return &pgLock{l: l, proxy: p, cut: make(chan time.Duration, 1)}, nil
}

// pgLock is one client's advisory lock: its proxy, and its lock
// connection, opened again after one was lost.
type pgLock struct {
	l     *pgLocks
	proxy *faultproxy.Pausable
	cut   chan time.Duration // a pending cut-lock-conn, taken at the freeze point
	conn  *pglock.Lock
	// cutToken is the tenure whose lock connection was cut last: a cut
	// queued for it again (it still holds, as far as the harness knows) is
	// dropped.
	cutToken uint64
}

func (a *pgLock) via() pglock.Option { return pglock.WithVia(a.proxy.URL()[len("http://"):]) }

func (a *pgLock) Acquire(ctx context.Context) (Tenure, error) {
	if a.conn != nil && !a.conn.Usable() {
		_ = a.conn.Close()
		a.conn = nil
	}
	if a.conn == nil {
		c, err := pglock.Open(ctx, a.l.dsn, a.l.name, pglock.WithKeepalive(PGKeepalive), pglock.WithDialTimeout(2*time.Second), a.via())
		if err != nil {
			return nil, err
		}
		a.conn = c
	}
	if err := a.conn.Lock(ctx); err != nil {
		return nil, err
	}
	tok, err := a.conn.Token(ctx, a.l.seq)
	if err != nil {
		_ = a.conn.Close()
		return nil, err
	}
	return pgTenure{c: a.conn, token: tok}, nil
}

func (a *pgLock) Close() error {
	if a.conn != nil {
		_ = a.conn.Close()
	}
	a.proxy.Close()
	return nil
}

type pgTenure struct {
	c     *pglock.Lock
	token fencing.Token
}

func (t pgTenure) Token() fencing.Token { return t.token }
func (t pgTenure) Scope() string        { return Scope }
func (t pgTenure) Slot() int            { return 0 }
func (t pgTenure) Reader() bool         { return false }

// Alive is the holder's belief: its lock connection is not known closed.
func (t pgTenure) Alive() bool { return t.c.Alive() }

// Release unlocks; a closed connection (the lock went with it) is
// session.ErrNotHeld, which ends the worker's retries.
func (t pgTenure) Release(ctx context.Context) error {
	err := t.c.Unlock(ctx)
	if errors.Is(err, pglock.ErrClosed) || errors.Is(err, pglock.ErrNotHeld) || (err != nil && !t.c.Usable()) {
		return session.ErrNotHeld
	}
	return err
}

// cutLock queues a cut of the current holder's lock connection, taken at
// its freeze point (after its read, before its write), hold long.
func (r *run) cutLock(s Step) func() {
	c := int(r.holder.Load())
	if c == 0 {
		c = s.Client
	}
	if a, ok := r.workers[c-1].lk.(*pgLock); ok {
		select {
		case a.cut <- s.Hold:
		default:
		}
	}
	return func() {}
}

// cutPoint applies a pending cut-lock-conn at the freeze point and reports
// whether it did: the lock connection's traffic is held in its proxy, the
// keepalive bound passes, the server process of the connection is ended
// (what the server does when its keepalives give up), and the holder waits
// until a later holder was granted (at most supersedeWait), its pool's
// connections untouched. Then its writes go on: it never used its lock
// connection, so it still believes it holds.
func (w *worker) cutPoint(ctx context.Context, token uint64) bool {
	a, ok := w.lk.(*pgLock)
	if !ok {
		return false
	}
	var hold time.Duration
	select {
	case hold = <-a.cut:
	default:
		return false
	}
	if a.cutToken == token {
		return false
	}
	a.cutToken = token
	w.r.countFault(FaultCutLock)
	pid := a.conn.PID()
	w.r.progressf("cut the lock connection of client %d (holding token %d, server pid %d); its data connections stay up", w.id, token, pid)
	a.proxy.Pause(true)
	defer a.proxy.Pause(false)
	select {
	case <-ctx.Done():
		return true
	case <-time.After(PGKeepalive.Bound()):
	}
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := pglock.Terminate(tctx, w.r.pg.admin, pid)
	cancel()
	w.r.progressf("server ended client %d's session %s after the cut, as its keepalives would (%s): %v", w.id, PGKeepalive.Bound(), PGKeepalive, errOrOK(err))
	deadline := time.After(hold + supersedeWait)
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for w.r.granted.Load() <= token {
		select {
		case <-ctx.Done():
			return true
		case <-deadline:
			return true
		case <-poll.C:
		}
	}
	return true
}

// pgExecArgs are a process client's arguments with the advisory lock: the
// supervisor, `coordctl check pg-advisory-lock`, holds the lock on its own
// lock connection and takes the token; its command, `coordctl check
// sql-rmw`, makes the read-modify-write through its own pool, fenced with
// the token in a fenced run.
func (r *run) pgExecArgs(bin, id string) []string {
	return []string{"check", "pg-advisory-lock", "--dsn", r.pg.dsn, "--name", r.pg.name, "--sequence", r.pg.seq,
		"--timeout", lockTimeout.String(), "--dial-timeout", "2s",
		"--", bin, "check", "sql-rmw", "--dsn", r.pg.dsn, "--prefix", r.res.(*sqlResource).prefix, "--id", id,
		"--work", rmwWork.String(), "--fenced=" + strconv.FormatBool(r.cfg.Fencing), "-w", "json"}
}

// SQLCounter is a process client's handle on a run's SQL resource (the
// tables under a run's prefix, on PostgreSQL): the same reads and writes
// as the in-process clients'. Close closes its pool and leaves the tables.
type SQLCounter struct{ r *sqlResource }

// OpenSQLCounter opens the run's resource under prefix at dsn, fenced
// with fencing/sqlfence or not. It returns an error wrapping
// ErrDatabaseUnreachable when the database does not answer within
// dialTimeout.
func OpenSQLCounter(ctx context.Context, dsn, prefix string, fenced bool, dialTimeout time.Duration) (*SQLCounter, error) {
	cfg := Config{SQLDriver: "postgres", SQLDSN: dsn, DialTimeout: dialTimeout, Fencing: fenced}
	r, err := dialSQLResource(ctx, cfg, prefix)
	if err != nil {
		return nil, err
	}
	return &SQLCounter{r: r}, nil
}

// RMW is one read-modify-write of the counter with token, tagged
// id.token: (fenced) the fence, the read, work, the write of the value + 1.
func (c *SQLCounter) RMW(ctx context.Context, id string, token uint64, work time.Duration) (res RMWResult) {
	res = RMWResult{ID: fmt.Sprintf("%s.%d", id, token), Token: token}
	fail := func(err error) RMWResult {
		res.Message = err.Error()
		return res
	}
	if c.r.fence != nil {
		err := c.r.Fence(ctx, Scope, token)
		if res.Fence = c.r.Outcome(err); err != nil {
			return fail(err)
		}
	}
	v, _, err := c.r.Read(ctx, 0)
	if err != nil {
		return fail(err)
	}
	res.Read, res.ReadOK = v, true
	select {
	case <-time.After(work):
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	res.Wrote = v + 1
	err = c.r.Write(ctx, 0, res.Wrote, res.ID, token, Scope, 0)
	if res.Write = c.r.Outcome(err); err != nil {
		return fail(err)
	}
	return res
}

// Close closes the pool; the run's tables stay.
func (c *SQLCounter) Close() error { return c.r.db.Close() }
