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


def done(msg=""):
    if msg:
        out["message"] = msg
    print(json.dumps(out), flush=True)
    release()
    sys.exit(0)


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
