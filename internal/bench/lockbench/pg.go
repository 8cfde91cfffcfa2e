package lockbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/pglock"
	"github.com/coordkit/coordkit/session"
)

// colPG is the PostgreSQL advisory lock's column.
const colPG = "pg_advisory"

// AgainstPG is the Options.Against value that adds the pg_advisory column.
const AgainstPG = "pg-advisory"

// CrashTTL is the lease TTL of the coordkit holder process in the crash
// handoff: a killed holder's lock is free when its lease expires, up to the
// TTL after its last keepalive (they go every TTL/3) plus etcd's expiry
// check (every 500ms).
const CrashTTL = 2 * time.Second

// pgImpl is the advisory lock: each locker its own lock connection, with
// pglock.DefaultKeepalive. A waiter blocks in pg_advisory_lock and the
// server wakes it on release.
var pgImpl = impl{key: colPG, label: "pg_advisory_lock", pg: true,
	new: func(ctx context.Context, e *env, name string, _ bool) (bench.Locker, error) {
		l, err := pglock.Open(ctx, e.pgDSN, e.pgName(name), pglock.WithKeepalive(pglock.DefaultKeepalive))
		if err != nil {
			return nil, err
		}
		return pgLocker{l}, nil
	}}

type pgLocker struct{ l *pglock.Lock }

func (p pgLocker) Lock(ctx context.Context) error   { return p.l.Lock(ctx) }
func (p pgLocker) Unlock(ctx context.Context) error { return p.l.Unlock(ctx) }
func (p pgLocker) Close()                           { _ = p.l.Close() }

// dialPG checks that dsn answers and keeps an admin connection (pg_locks).
func (e *env) dialPG(ctx context.Context, dsn string) error {
	c, err := pglock.Connect(ctx, dsn, pglock.DefaultDialTimeout)
	if err != nil {
		return err
	}
	ns, err := pglock.NewNamespace("bench_lock")
	if err != nil {
		_ = c.Close(ctx)
		return err
	}
	cfg := c.Config()
	e.pgDSN, e.pgAdmin, e.pgNS = dsn, c, ns
	e.pgWhere = fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
	return nil
}

// pgName is a bench lock name's advisory lock name, in the run's namespace.
func (e *env) pgName(name string) string { return e.pgNS.Name(name) }

// pgSessions counts the sessions holding and waiting for name's key.
func (e *env) pgSessions(ctx context.Context, name string) (granted, waiting int, err error) {
	e.pgMu.Lock()
	defer e.pgMu.Unlock()
	return pglock.Sessions(ctx, e.pgAdmin, pglock.Key(e.pgName(name)))
}

// crashHolder is one implementation's holder process for the crash
// handoff: the command that holds name until it is killed, and how to see
// that it holds and that the waiter queued behind it.
type crashHolder struct {
	key  string
	args func(e *env, name string) []string
	// command, when set, is the program and its arguments instead of
	// coordctl with args.
	command func(e *env, name string) (string, []string)
	// queued reports how many clients hold or wait for name (waiter: the
	// waiting locker).
	queued func(ctx context.Context, e *env, name string, waiter bench.Locker) (int, error)
}

// etcdQueued counts the keys under name's prefix: its holder and waiters.
func etcdQueued(ctx context.Context, e *env, name string, _ bench.Locker) (int, error) {
	resp, err := e.watcher.Get(ctx, name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return int(resp.Count), nil
}

var crashHolders = map[string]crashHolder{
	colCoordkit: {key: colCoordkit,
		args: func(e *env, name string) []string {
			return []string{"--endpoints", strings.Join(e.endpoints, ","), "lock", name, "--ttl", CrashTTL.String(), "-w", "json"}
		},
		queued: etcdQueued},
	colAPI: {key: colAPI,
		command: func(e *env, name string) (string, []string) { return e.apiSrv.driver(name, "hold") },
		queued:  etcdQueued},
	colPG: {key: colPG,
		args: func(e *env, name string) []string {
			return []string{"check", "pg-advisory-lock", "--dsn", e.pgDSN, "--name", e.pgName(name), "-w", "json"}
		},
		queued: pgQueued},
	colRedisPy: {key: colRedisPy,
		command: func(e *env, name string) (string, []string) {
			return e.pyLocks("redis", name, strconv.FormatFloat(CrashTTL.Seconds(), 'f', -1, 64), "hold")
		},
		queued: redisPyQueued},
	colPsycopg: {key: colPsycopg,
		command: func(e *env, name string) (string, []string) { return e.pyLocks("pg", name, "0", "hold") },
		queued:  pgQueued},
}

// pgQueued counts the sessions holding and waiting for name's key.
func pgQueued(ctx context.Context, e *env, name string, _ bench.Locker) (int, error) {
	g, w, err := e.pgSessions(ctx, name)
	return g + w, err
}

// crashHandoff measures, n times, the wait of a waiter behind a holder
// process that is killed (SIGKILL): from the kill to the waiter's Lock
// returning. For coordkit that is the lease running out (CrashTTL); for
// the advisory lock, the server noticing the closed socket.
func crashHandoff(ctx context.Context, e *env, im impl, coordctl string, n int) ([]time.Duration, error) {
	ch, ok := crashHolders[im.key]
	if !ok {
		return nil, fmt.Errorf("no crash holder for %s", im.key)
	}
	if (im.key == colCoordkit || im.key == colAPI) && e.watcher == nil {
		w, err := e.client()
		if err != nil {
			return nil, err
		}
		e.watcher = w
	}
	var out []time.Duration
	for range n {
		name := e.name("crash")
		d, err := crashOnce(ctx, e, im, ch, coordctl, name)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func crashOnce(ctx context.Context, e *env, im impl, ch crashHolder, coordctl, name string) (time.Duration, error) {
	// The waiter first: coordkit's locker takes and releases the lock once
	// to set up its session.
	l, err := im.new(ctx, e, name, true)
	if err != nil {
		return 0, err
	}
	defer l.Close()
	prog, args := coordctl, []string(nil)
	if ch.command != nil {
		prog, args = ch.command(e, name)
	} else {
		args = ch.args(e, name)
	}
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = os.Environ()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	var waitOnce sync.Once
	var waitErr error
	wait := func() error { waitOnce.Do(func() { waitErr = cmd.Wait() }); return waitErr }
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = wait()
	}()
	exited := make(chan struct{})
	go func() { _ = wait(); close(exited) }()
	// until polls cond: neither lock exposes an event for "someone queued".
	until := func(what string, cond func() (bool, error)) error {
		deadline := time.Now().Add(30 * time.Second)
		for {
			ok, err := cond()
			switch {
			case err != nil:
				return err
			case ok:
				return nil
			case time.Now().After(deadline):
				return fmt.Errorf("%s: not within 30s (holder: %s)", what, strings.TrimSpace(stderr.String()))
			}
			select {
			case <-exited:
				return fmt.Errorf("%s: the holder process exited: %s", what, strings.TrimSpace(stderr.String()))
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
	count := func(want int) func() (bool, error) {
		return func() (bool, error) {
			n, err := ch.queued(ctx, e, name, l)
			return n >= want, err
		}
	}
	if err := until("the holder process holds", count(1)); err != nil {
		return 0, err
	}
	got := make(chan error, 1)
	st := &stamped{Locker: l} // granted: by the waiter's own clock (a Python waiter's, not its pipe's)
	go func() { got <- st.Lock(ctx) }()
	if err := until("the waiter queued", count(2)); err != nil {
		return 0, err
	}
	killed := monotonicNow()
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return 0, err
	}
	if err := <-got; err != nil {
		return 0, err
	}
	d := time.Duration(st.locked[0] - killed)
	if err := l.Unlock(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, session.ErrNotHeld) {
		return 0, err
	}
	return d, nil
}
