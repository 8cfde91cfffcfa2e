package lockbench

import (
	"context"
	"path/filepath"
	"strconv"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/pglock"
)

// The columns of the locks a Python team reaches for, measured from
// Python processes as api_python is.
const (
	colRedisPy = "redis_py"
	colPsycopg = "psycopg"
)

// The Options.Against values that add them.
const (
	AgainstRedisPy = "redis-py"
	AgainstPsycopg = "psycopg"
)

// pyLocksDriver is the Python program behind the redis_py and psycopg
// lockers, with apiDriver's protocol: argv = MODE WHERE KEY TTL [hold].
// redis: redis-py's Lock (Debian's python3-redis) on the Redis server at
// WHERE (host:port), key KEY, timeout TTL seconds, redis-py's default
// polling (sleep 0.1 s); it says "wait" after each try that found the lock
// taken, the only trace a redis-py waiter leaves (as redsync's failed SET
// NX are counted). pg: a
// session-level pg_advisory_lock(KEY) through psycopg2 on the database
// WHERE (a libpq DSN), autocommit, the server's default keepalives. The
// crash handoff's holder ("hold") renews a redis-py lock every TTL/3
// (reacquire: redis-py has no keepalive of its own), as a long holder must.
const pyLocksDriver = `import sys, time
mode, where, key, ttl = sys.argv[1:5]
now = time.monotonic_ns
if mode == "redis":
    import redis
    from redis.lock import Lock
    host, port = where.rsplit(":", 1)
    r = redis.Redis(host=host, port=int(port))
    class Told(Lock):
        def do_acquire(self, token):
            ok = super().do_acquire(token)
            if not ok:
                print("wait", flush=True)
            return ok
    def lock():
        lk = Told(r, key, timeout=float(ttl))
        lk.acquire()
        return lk
    def unlock(lk):
        lk.release()
else:
    import psycopg2
    conn = psycopg2.connect(where)
    conn.autocommit = True
    cur = conn.cursor()
    def lock():
        cur.execute("SELECT pg_advisory_lock(%s)", (int(key),))
        cur.fetchall()
    def unlock(_):
        cur.execute("SELECT pg_advisory_unlock(%s)", (int(key),))
        cur.fetchall()
if len(sys.argv) > 5:
    h = lock()
    print("held", flush=True)
    while True:  # a redis-py lock has no keepalive: a long holder renews it
        time.sleep(max(float(ttl), 0.3) / 3)
        if mode == "redis":
            h.reacquire()
h = None
print("ready", flush=True)
for line in sys.stdin:
    try:
        if line.startswith("lock"):
            h = lock()
            t = now()
        else:
            t = now()
            unlock(h)
        print("ok", t, flush=True)
    except Exception as e:
        print("err", repr(e).replace("\n", " "), flush=True)
`

// pyLocksTTL is the redis-py lock's timeout in the handoff and contended
// tests: the coordkit lockers' TTL.
const pyLocksTTL = "10"

// pyLocks is the command line of a pylocks.py process.
func (e *env) pyLocks(mode, name, ttl string, extra ...string) (string, []string) {
	a := e.apiSrv
	var where, key string
	if mode == "redis" {
		where, key = e.redisAddr, e.keyspace.Key(name)
	} else {
		where, key = e.pgDSN, strconv.FormatInt(pglock.Key(e.pgName(name)), 10)
	}
	return a.python, append([]string{filepath.Join(a.dir, "pylocks.py"), mode, where, key, ttl}, extra...)
}

var redisPyImpl = impl{key: colRedisPy, label: "redis-py Lock (Python)", pyWaits: true,
	new: func(ctx context.Context, e *env, name string, _ bool) (bench.Locker, error) {
		prog, args := e.pyLocks("redis", name, pyLocksTTL)
		return startPyLocker(ctx, prog, args)
	}}

var psycopgImpl = impl{key: colPsycopg, label: "pg_advisory_lock through psycopg2 (Python)", pg: true,
	new: func(ctx context.Context, e *env, name string, _ bool) (bench.Locker, error) {
		prog, args := e.pyLocks("pg", name, pyLocksTTL)
		return startPyLocker(ctx, prog, args)
	}}

// redisPyQueued counts a redis-py holder (its key exists) and the waiter
// once it said "wait".
func redisPyQueued(ctx context.Context, e *env, name string, waiter bench.Locker) (int, error) {
	n, err := e.redis.Exists(ctx, e.keyspace.Key(name)).Result()
	if err != nil {
		return 0, err
	}
	if p, ok := waiter.(*pyLocker); ok && p.waits.Load() > 0 {
		n++
	}
	return int(n), nil
}
