"""The checker's Python process client (coordctl check --python-clients).

One read-modify-write under a lock, as `coordctl check rmw` does it: take the
lock, fence (if asked), read the counter, wait, write the value + 1 with the
token, print one JSON line (safety.RMWResult), release. It checks nothing
between its read and its write: a client that lost the lock meanwhile writes
anyway, which only the resource's check of the token (or of the version read,
If-Match) can refuse.

Its one argument is a JSON object (safety.pyArgs): "lock" is "api" (coordkit's
mutex through the coordination API with clients/python's coordkit.py, which is
in "dir") or "redis" (redis-py's Lock on the Redis at "redis", the key "name",
timeout "ttl" seconds, no renewal: the lock as a redis-py user takes it; the
grant is numbered by INCR of "grants", which orders holders for the checker
and fences nothing). Exit 3: the lock was not acquired within "wait" seconds.
With "sql" (safety.pySQL) the counter is the run's SQL resource instead of the
HTTP one at "res", and a fenced write checks its token with coordkit.fence_sql
in the write's transaction.
"""
import json
import sys
import time
import urllib.error
import urllib.request

a = json.loads(sys.argv[1])


def hold():
    """Takes the lock: (token, scope, release)."""
    if a["lock"] == "api":
        sys.path.insert(0, a["dir"])
        import coordkit
        try:
            h = coordkit.Client(a["agent"]).lock(a["name"], timeout=a["wait"]).acquire()
        except coordkit.CoordError:
            sys.exit(3)
        return h.token, h.scope, h.release
    import redis
    host, _, port = a["redis"].rpartition(":")
    r = redis.Redis(host=host, port=int(port), socket_timeout=5)
    lk = r.lock(a["name"], timeout=a["ttl"], blocking_timeout=a["wait"])
    if not lk.acquire():
        sys.exit(3)
    n = r.incr(a["grants"])

    def release():
        try:
            lk.release()
        except redis.exceptions.LockError:
            pass  # it expired: nobody holds it, or a later holder does
    return n, a["scope"], release


token, scope, release = hold()
print("held", flush=True)  # the checker's nemesis pauses or kills holders only
out = {"id": "%s.%d" % (a["id"], token), "token": token, "read": 0, "read_ok": False, "wrote": 0}


def done(msg=""):
    if msg:
        out["message"] = msg
    print(json.dumps(out), flush=True)
    release()
    sys.exit(0)


def call(method, path, body=None, headers=None):
    h = {"Fencing-Token": str(token), "Fencing-Scope": scope}
    h.update(headers or {})
    req = urllib.request.Request(a["res"] + path, data=body, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return "ok", json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return {409: "stale", 404: "notfound", 412: "conflict"}.get(e.code, "fail"), {}
    except Exception:
        return "unknown", {}


def rmw_http():
    if a["fence"]:
        out["fence"] = call("POST", "/v1/fence")[0]
        if out["fence"] != "ok":
            done("fence: " + out["fence"])
    got, e = call("GET", "/v1/kv/" + a["key"])
    version = 0  # If-Match: 0, the key must not exist yet
    if got == "ok":
        out["read"], version = int(e["value"].split(" ")[0]), e["version"]
    elif got != "notfound":
        done("read: " + got)
    out["read_ok"] = True
    time.sleep(a["work"])
    out["wrote"] = out["read"] + 1
    cond = {"If-Match": str(version)} if a["if_match"] else None
    out["write"] = call("PUT", "/v1/kv/" + a["key"], ("%d %s" % (out["wrote"], out["id"])).encode(), cond)[0]
    done()


def rmw_sql(s):
    """The same read-modify-write on the run's SQL resource (safety's
    sqlResource): a write is one transaction of fence_sql (fenced), the
    sequence's increment, the counter's update and the log's insert, as the
    in-process clients' sqlfence.Do runs it. Outcomes as Go's: stale, or
    unknown for any other error."""
    import coordkit
    p, held = s["prefix"], type("Held", (), {"token": token, "scope": scope})()
    if s["driver"] == "sqlite":
        import sqlite3
        db, ph = sqlite3.connect(s["path"], timeout=10, isolation_level=None), "?"
    elif s["driver"] == "postgres":
        import psycopg2
        db, ph = psycopg2.connect(s["dsn"], connect_timeout=5), "%s"
    else:
        import pymysql
        db, ph = pymysql.connect(host=s["host"], port=s["port"], user=s["user"], password=s.get("password", ""),
                                 database=s["db"], connect_timeout=5, read_timeout=10, write_timeout=10), "%s"

    def txn(fn):
        """fn(cur) in one transaction; an error rolls it back and is raised."""
        cur = db.cursor()
        if s["driver"] == "sqlite":
            cur.execute("BEGIN IMMEDIATE")  # SQLite's write lock at BEGIN, as sqlfence.SQLiteDSN asks
        try:
            v = fn(cur)
        except BaseException:
            try:
                cur.execute("ROLLBACK") if s["driver"] == "sqlite" else db.rollback()
            except Exception:
                pass
            raise
        cur.execute("COMMIT") if s["driver"] == "sqlite" else db.commit()
        return v

    def outcome(e):
        return "stale" if isinstance(e, coordkit.StaleError) else "unknown"

    def step(field, fn):
        """fn in a transaction; out[field] is its outcome, and a failure ends
        the client."""
        try:
            txn(fn)
            out[field] = "ok"
        except Exception as e:
            out[field] = outcome(e)
            done("%s: %s" % (field, e))

    def fence(cur):
        coordkit.fence_sql(cur, held, table=p + "_fence", param=ph)

    if a["fence"] and s["fenced"]:
        step("fence", fence)

    def read(cur):
        cur.execute(f"SELECT v FROM {p}_counter WHERE k = {ph}", (a["key"],))
        row = cur.fetchone()
        return row[0] if row else 0
    try:
        out["read"] = txn(read)
    except Exception as e:
        done("read: %s" % e)
    out["read_ok"] = True
    time.sleep(a["work"])
    out["wrote"] = out["read"] + 1

    def write(cur):
        if s["fenced"]:
            fence(cur)
        cur.execute(f"UPDATE {p}_seq SET n = n + 1 WHERE one = 1")
        cur.execute(f"SELECT n FROM {p}_seq WHERE one = 1")
        seq = cur.fetchone()[0]
        cur.execute(f"UPDATE {p}_counter SET v = {ph}, id = {ph} WHERE k = {ph}", (out["wrote"], out["id"], a["key"]))
        cur.execute(f"INSERT INTO {p}_log (seq, k, token, scope, v, id) VALUES ({ph}, {ph}, {ph}, {ph}, {ph}, {ph})",
                    (seq, a["key"], token, scope, out["wrote"], out["id"]))
    step("write", write)
    done()


if a.get("sql"):
    rmw_sql(a["sql"])
rmw_http()
