package pglock

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/coordkit/coordkit/fencing"
)

// Errors of this package, matched with errors.Is.
var (
	// ErrInvalid: a constructor's argument cannot be used.
	ErrInvalid = errors.New("pglock: invalid")
	// ErrUnreachable: no server answered: nothing listened at the address,
	// or nothing answered within the dial timeout.
	ErrUnreachable = errors.New("pglock: postgres unreachable")
	// ErrRefused: the server answered and refused the connection (no such
	// database or role, a wrong password, too many clients); the server's
	// *pgconn.PgError is wrapped too.
	ErrRefused = errors.New("pglock: postgres refused the connection")
	// ErrHeld: Lock on a handle that holds the lock already.
	ErrHeld = errors.New("pglock: held already")
	// ErrNotHeld: Unlock or Token without a holding, or the server said
	// the session did not hold the key.
	ErrNotHeld = errors.New("pglock: not held")
	// ErrClosed: the lock connection is closed (by Close, by a failed or
	// canceled Lock, or because the server or the network ended it); the
	// session's locks are gone.
	ErrClosed = errors.New("pglock: lock connection closed")
)

// DefaultDialTimeout is the dial timeout when none is given.
const DefaultDialTimeout = 3 * time.Second

// Key is name's advisory-lock key: the first 8 bytes of SHA-256(name),
// big-endian, as a signed int64 (the package doc gives the SQL).
func Key(name string) int64 {
	sum := sha256.Sum256([]byte(name))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// Keepalive are the TCP keepalive settings of a lock connection, applied on
// both ends: the client's socket, and the server's through SET
// tcp_keepalives_idle, tcp_keepalives_interval and tcp_keepalives_count.
// With them a peer that stopped answering is given up after at most
// Bound(); the zero value leaves the OS's and the server's defaults.
type Keepalive struct {
	Idle     time.Duration // silence before the first probe
	Interval time.Duration // between probes
	Count    int           // unanswered probes before the connection is dropped
}

// DefaultKeepalive is what the bench and the safety check use: a dead
// client or server is given up about 4s after it went silent.
var DefaultKeepalive = Keepalive{Idle: 2 * time.Second, Interval: time.Second, Count: 2}

// Bound is how long after the last traffic a silent peer is given up.
func (k Keepalive) Bound() time.Duration { return k.Idle + time.Duration(k.Count)*k.Interval }

func (k Keepalive) zero() bool { return k == Keepalive{} }

// String is the settings as the server names them.
func (k Keepalive) String() string {
	if k.zero() {
		return "OS and server defaults"
	}
	return fmt.Sprintf("tcp_keepalives_idle=%ds tcp_keepalives_interval=%ds tcp_keepalives_count=%d (given up %s after the last traffic), on both ends",
		int(k.Idle.Seconds()), int(k.Interval.Seconds()), k.Count, k.Bound())
}

// Option configures Open.
type Option func(*options)

type options struct {
	dialTimeout time.Duration
	keepalive   Keepalive
	dial        pgconn.DialFunc
	via         string
}

// WithDialTimeout bounds the dial and the first answer (DefaultDialTimeout
// when not given).
func WithDialTimeout(d time.Duration) Option { return func(o *options) { o.dialTimeout = d } }

// WithKeepalive sets the lock connection's keepalives (default: none set,
// the OS's and the server's defaults).
func WithKeepalive(k Keepalive) Option { return func(o *options) { o.keepalive = k } }

// WithDialFunc dials the lock connection's socket with dial instead of a
// net.Dialer (to route it through a fault proxy); the keepalives are then
// the dial function's business on the client side.
func WithDialFunc(dial pgconn.DialFunc) Option { return func(o *options) { o.dial = dial } }

// WithVia dials the lock connection's socket to addr (host:port: a fault
// proxy in front of the server) instead of the DSN's host, with the dial
// timeout and, on the client side, the keepalives of the other options.
func WithVia(addr string) Option { return func(o *options) { o.via = addr } }

// Lock is the advisory lock on one name, over its own lock connection.
type Lock struct {
	name string
	key  int64
	conn *pgx.Conn
	pid  uint32

	mu   sync.Mutex // serialises the connection's use
	held bool
}

// Open dials the lock connection of the lock on name at dsn (a pgx DSN:
// URL or key=value) and sets its keepalives. It returns ErrInvalid for an
// empty name or a DSN pgx cannot parse, an error wrapping ErrUnreachable
// (naming host and port) when no server answers within the dial timeout,
// and one wrapping ErrRefused when the server refuses the connection. The
// caller closes the Lock.
func Open(ctx context.Context, dsn, name string, opts ...Option) (*Lock, error) {
	o := options{dialTimeout: DefaultDialTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if name == "" {
		return nil, fmt.Errorf("%w: empty lock name", ErrInvalid)
	}
	if o.dialTimeout <= 0 {
		o.dialTimeout = DefaultDialTimeout
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: dsn: %w", ErrInvalid, err)
	}
	where := net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	cfg.ConnectTimeout = o.dialTimeout
	switch {
	case o.dial != nil:
		cfg.DialFunc = o.dial
	case !o.keepalive.zero() || o.via != "":
		d := &net.Dialer{Timeout: o.dialTimeout}
		if !o.keepalive.zero() {
			d.KeepAliveConfig = net.KeepAliveConfig{Enable: true, Idle: o.keepalive.Idle, Interval: o.keepalive.Interval, Count: o.keepalive.Count}
		}
		cfg.DialFunc = d.DialContext
		if o.via != "" {
			cfg.DialFunc = func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "tcp", o.via) }
		}
	}
	dctx, cancel := context.WithTimeout(ctx, o.dialTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(dctx, cfg)
	if err != nil {
		return nil, connectError(ctx, where, o.dialTimeout, err)
	}
	if k := o.keepalive; !k.zero() {
		q := fmt.Sprintf("SET tcp_keepalives_idle = %d; SET tcp_keepalives_interval = %d; SET tcp_keepalives_count = %d",
			int(k.Idle.Seconds()), max(1, int(k.Interval.Seconds())), k.Count)
		if _, err := conn.Exec(dctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
			_ = conn.Close(context.Background())
			return nil, fmt.Errorf("pglock: set keepalives on %s: %w", where, err)
		}
	}
	return &Lock{name: name, key: Key(name), conn: conn, pid: conn.PgConn().PID()}, nil
}

// Holding is what a holder of the lock reports (coordctl check
// pg-advisory-lock prints it): the lock's name and key, the server process
// of its lock connection, and its token if it took one.
type Holding struct {
	Name  string `json:"name"`
	Key   int64  `json:"key"`
	PID   uint32 `json:"pid"`
	Token uint64 `json:"token,omitempty"`
}

// Holding is the lock's Holding with token.
func (l *Lock) Holding(token fencing.Token) Holding {
	return Holding{Name: l.name, Key: l.key, PID: l.pid, Token: uint64(token)}
}

// WriteSimple writes h as a line.
func (h Holding) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintf(w, "holding %s (key %d, server pid %d, token %d)\n", h.Name, h.Key, h.PID, h.Token)
	return err
}

// Name is the lock's name, Key its advisory key.
func (l *Lock) Name() string { return l.name }

// Key is the lock's advisory key, Key(Name()).
func (l *Lock) Key() int64 { return l.key }

// PID is the server process of the lock connection (pg_locks.pid,
// pg_terminate_backend's argument).
func (l *Lock) PID() uint32 { return l.pid }

// LockWithin is Lock giving up after d (0: waiting without end).
func (l *Lock) LockWithin(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return l.Lock(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return l.Lock(ctx)
}

// Lock blocks in pg_advisory_lock until this session holds the key. It
// returns ErrHeld when it holds already, ErrClosed when the connection is
// closed, and, when ctx ends first or the statement fails, an error
// wrapping ctx's (or the server's) and closes the lock connection: the
// server may have granted the lock as the cancel arrived, and a closed
// session holds nothing.
func (l *Lock) Lock(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if l.held {
		return fmt.Errorf("%w: %s", ErrHeld, l.name)
	}
	if _, err := l.conn.Exec(ctx, "SELECT pg_advisory_lock($1)", l.key); err != nil {
		_ = l.conn.Close(context.Background())
		if ctx.Err() != nil {
			return fmt.Errorf("pglock: lock %s: %w", l.name, ctx.Err())
		}
		return fmt.Errorf("pglock: lock %s: %w", l.name, err)
	}
	l.held = true
	return nil
}

// TryLock is pg_try_advisory_lock: it takes the key if it is free and
// reports whether it did. Errors as Lock's, except that a failure leaves
// the connection open when ctx is live.
func (l *Lock) TryLock(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return false, err
	}
	if l.held {
		return false, fmt.Errorf("%w: %s", ErrHeld, l.name)
	}
	var ok bool
	if err := l.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", l.key).Scan(&ok); err != nil {
		if ctx.Err() != nil {
			_ = l.conn.Close(context.Background())
		}
		return false, fmt.Errorf("pglock: try lock %s: %w", l.name, err)
	}
	l.held = ok
	return ok, nil
}

// Token returns nextval(seq) taken on the lock connection: it succeeds
// only while the session that holds the lock lives, so a later holder's
// token is larger. seq is a sequence's name (see CreateSequence). It
// returns ErrNotHeld without a holding, ErrClosed when the connection is
// closed, and the server's error, wrapped.
func (l *Lock) Token(ctx context.Context, seq string) (fencing.Token, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return 0, err
	}
	if !l.held {
		return 0, fmt.Errorf("%w: %s", ErrNotHeld, l.name)
	}
	var n int64
	if err := l.conn.QueryRow(ctx, "SELECT nextval($1::regclass)", seq).Scan(&n); err != nil {
		return 0, fmt.Errorf("pglock: token of %s from %s: %w", l.name, seq, err)
	}
	return fencing.Token(n), nil
}

// Unlock is pg_advisory_unlock. It returns ErrNotHeld when this handle does
// not hold, or the server said the session did not (it was ended and this
// is a new one: impossible here, the connection is not redialed), ErrClosed
// when the connection is closed (the lock went with it), and the server's
// error, wrapped.
func (l *Lock) Unlock(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held {
		return fmt.Errorf("%w: %s", ErrNotHeld, l.name)
	}
	if err := l.usable(); err != nil {
		l.held = false
		return err
	}
	var ok bool
	err := l.conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", l.key).Scan(&ok)
	switch {
	case err != nil && l.conn.IsClosed():
		l.held = false
		return fmt.Errorf("%w: unlock %s: %w", ErrClosed, l.name, err)
	case err != nil:
		return fmt.Errorf("pglock: unlock %s: %w", l.name, err)
	}
	l.held = false
	if !ok {
		return fmt.Errorf("%w: %s: the server's session did not hold it", ErrNotHeld, l.name)
	}
	return nil
}

// Alive reports the holder's own belief: it holds and its lock connection
// is not known to be closed. It does no I/O, so a session the server ended
// behind a partition still looks alive.
func (l *Lock) Alive() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held && !l.conn.IsClosed()
}

// Close closes the lock connection; the server releases the session's
// locks. It can be called from any goroutine, during a blocked Lock too:
// then it closes the socket under the blocked statement, which ends it.
func (l *Lock) Close() error {
	if !l.mu.TryLock() {
		return l.conn.PgConn().Conn().Close()
	}
	defer l.mu.Unlock()
	l.held = false
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return l.conn.Close(ctx)
}

// Usable reports whether the lock connection is not known to be closed.
func (l *Lock) Usable() bool { return !l.conn.IsClosed() }

func (l *Lock) usable() error {
	if l.conn.IsClosed() {
		return fmt.Errorf("%w: %s", ErrClosed, l.name)
	}
	return nil
}

// Namespace is one run's random names on a shared server: lock names and
// sequences.
type Namespace struct{ prefix string }

var namespaceWhat = regexp.MustCompile(`^[a-z0-9][a-z0-9_]*$`)

// NewNamespace returns a namespace "coordkit_WHAT_RANDOM_" for a run; what
// (lower-case letters, digits and underscores) says whose run it is. It
// returns ErrInvalid for another what.
func NewNamespace(what string) (Namespace, error) {
	if !namespaceWhat.MatchString(what) || len(what) > 24 {
		return Namespace{}, fmt.Errorf("%w: namespace %q: want [a-z0-9_]+, at most 24", ErrInvalid, what)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return Namespace{prefix: "coordkit_" + what + "_" + hex.EncodeToString(b) + "_"}, nil
}

// Prefix is the prefix of every name of the namespace.
func (n Namespace) Prefix() string { return n.prefix }

// Name is name's lock name (and sequence name) in the namespace.
func (n Namespace) Name(name string) string { return n.prefix + name }

var sequenceName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Execer is what the sequence helpers need: a pgx.Conn or a pgx pool.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// CreateSequence creates the sequence name (lower-case letters, digits and
// underscores, at most 63; ErrInvalid otherwise), starting at 1.
func CreateSequence(ctx context.Context, db Execer, name string) error {
	if !sequenceName.MatchString(name) {
		return fmt.Errorf("%w: sequence name %q", ErrInvalid, name)
	}
	if _, err := db.Exec(ctx, "CREATE SEQUENCE "+name); err != nil {
		return fmt.Errorf("pglock: create sequence %s: %w", name, err)
	}
	return nil
}

// DropSequence drops the sequence name if it exists.
func DropSequence(ctx context.Context, db Execer, name string) error {
	if !sequenceName.MatchString(name) {
		return fmt.Errorf("%w: sequence name %q", ErrInvalid, name)
	}
	if _, err := db.Exec(ctx, "DROP SEQUENCE IF EXISTS "+name); err != nil {
		return fmt.Errorf("pglock: drop sequence %s: %w", name, err)
	}
	return nil
}

// Connect returns a plain connection to dsn once the server answered within
// timeout (DefaultDialTimeout when zero), for the run's own statements
// (sequences, pg_locks). Errors as Open's.
func Connect(ctx context.Context, dsn string, timeout time.Duration) (*pgx.Conn, error) {
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: dsn: %w", ErrInvalid, err)
	}
	cfg.ConnectTimeout = timeout
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(dctx, cfg)
	if err != nil {
		return nil, connectError(ctx, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), timeout, err)
	}
	return conn, nil
}

// connectError says why a connection to where failed: ctx ended, the
// server refused it (ErrRefused, with its message), nothing answered
// within timeout, or nothing listened (both ErrUnreachable).
func connectError(ctx context.Context, where string, timeout time.Duration, err error) error {
	var pgErr *pgconn.PgError
	var netErr net.Error
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("pglock: connect %s: %w", where, ctx.Err())
	case errors.As(err, &pgErr):
		return fmt.Errorf("%w at %s: %w", ErrRefused, where, err)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("%w: %s did not answer within %s: %w", ErrUnreachable, where, timeout, err)
	}
	return fmt.Errorf("%w at %s: %w", ErrUnreachable, where, err)
}

// Sessions counts the sessions of the current database that hold key
// (granted) and that wait for it in pg_advisory_lock (waiting), from
// pg_locks. db is any connection to the same database.
func Sessions(ctx context.Context, db *pgx.Conn, key int64) (granted, waiting int, err error) {
	// A bigint key is stored as classid (high 32 bits) and objid (low),
	// objsubid 1.
	hi, lo := uint32(uint64(key)>>32), uint32(uint64(key))
	err = db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE granted), count(*) FILTER (WHERE NOT granted) FROM pg_locks
		WHERE locktype = 'advisory' AND classid = $1::bigint::oid AND objid = $2::bigint::oid AND objsubid = 1
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
		int64(hi), int64(lo)).Scan(&granted, &waiting)
	if err != nil {
		return 0, 0, fmt.Errorf("pglock: read pg_locks: %w", err)
	}
	return granted, waiting, nil
}

// Terminate ends the server process pid (pg_terminate_backend) and returns
// once it has ended: what the server does when its keepalives give up on a
// client; its session's locks are released.
func Terminate(ctx context.Context, db *pgx.Conn, pid uint32) error {
	var ok bool
	if err := db.QueryRow(ctx, "SELECT pg_terminate_backend($1, 5000)", int32(pid)).Scan(&ok); err != nil {
		return fmt.Errorf("pglock: terminate backend %d: %w", pid, err)
	}
	if !ok {
		return fmt.Errorf("pglock: terminate backend %d: it did not end within 5s", pid)
	}
	return nil
}
