"""coordkit: fenced locks, semaphores and leadership through `coordctl agent`.

Standard library only, Python >= 3.9. A hold is one HTTP request whose
response streams JSON lines; closing it (or this process dying) releases.

    import coordkit
    client = coordkit.Client("http://127.0.0.1:4050")
    with client.lock("jobs/nightly", timeout=5) as held:
        write(data, token=held.token, scope=held.scope)  # the resource fences
        held.check()  # raises coordkit.LostError once the hold is lost

See docs/api.md for the API and what a hold does and does not promise.
"""

import http.client
import json
import socket
import sys
import _thread
import threading
import time
import urllib.parse
import weakref
from datetime import datetime

__all__ = ["Client", "Hold", "CoordError", "NotAcquired", "LostError", "StaleError", "fence_sql",
           "FENCE_TABLE", "FENCE_TABLE_MYSQL"]


class CoordError(Exception):
    """An error answer of the agent: .code is its stable code (docs/api.md)."""

    def __init__(self, code, message, status=None):
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.status = code, message, status


class NotAcquired(CoordError):
    """Not acquired: code "busy" (try_once), "timeout", or "cancelled" (release()
    was called while acquire() waited)."""


class LostError(Exception):
    """The hold was lost (or released): .reason says why."""

    def __init__(self, reason):
        super().__init__(f"hold lost: {reason}")
        self.reason = reason


class StaleError(Exception):
    """A fenced write was refused: a newer holder of the scope wrote first.
    .token and .scope are the refused ones, .floor the scope's floor read in
    the same transaction (None if not read)."""

    def __init__(self, message, token=None, scope=None, floor=None):
        super().__init__(message)
        self.token, self.scope, self.floor = token, scope, floor


# coordkit's SQL fence (fencing/sqlfence, `coordctl sql`): one row per scope
# with the highest token admitted. FENCE_TABLE is PostgreSQL's and SQLite's
# (>= 3.24) table, FENCE_TABLE_MYSQL MySQL's and MariaDB's: the one
# fencing/sqlfence creates there, InnoDB (its row locks are held until COMMIT
# and its writes roll back; a MyISAM, Aria or MEMORY table has neither) and
# a VARBINARY scope, compared byte for byte. BIGINT: a token is an etcd
# revision, 64 bits (PostgreSQL's INTEGER has 32 and would refuse every
# token past 2,147,483,647); SQLite's integers are 64 bits whatever the
# column says.
FENCE_TABLE = ("CREATE TABLE IF NOT EXISTS {t} (scope TEXT NOT NULL PRIMARY KEY, "
               "token BIGINT NOT NULL, writes BIGINT NOT NULL)")
FENCE_TABLE_MYSQL = ("CREATE TABLE IF NOT EXISTS {t} (scope VARBINARY(512) NOT NULL PRIMARY KEY, "
                     "token BIGINT NOT NULL, writes BIGINT NOT NULL) ENGINE=InnoDB")

# The DB-API modules fence_sql knows the dialect of, by the top-level module
# of the connection's class (its dialect when none is given).
_DIALECT_MODULES = {"pymysql": "mysql", "MySQLdb": "mysql", "mysql": "mysql", "mariadb": "mysql",
                    "psycopg2": "postgres", "psycopg": "postgres", "pg8000": "postgres",
                    "sqlite3": "sqlite"}


def fence_sql(cur, held, table="coordkit_fence", param=None, dialect=None):
    """Check held's token as the first statements of the caller's open
    transaction on DB-API cursor cur. Raises StaleError, after which the
    caller must roll back; else commit after its own statements. The check
    is sqlfence's, so Go, coordctl sql and Python holders fence each other.

    dialect is "postgres", "sqlite" or "mysql" (MySQL and MariaDB: the
    table must be FENCE_TABLE_MYSQL's, InnoDB; another engine raises
    RuntimeError before anything is written). By default it comes from the
    driver's module (the connection's class's, else the cursor's):
    "postgres" for psycopg2, psycopg and pg8000,
    "sqlite" for sqlite3, "mysql" for PyMySQL, mysqlclient (MySQLdb),
    mysql-connector and MariaDB Connector/Python; another driver gets the
    SQL PostgreSQL and SQLite share. param is the driver's placeholder; by
    default the one its module's paramstyle names ("?" for qmark, "%s" for
    format and pyformat).

    On PostgreSQL the check is first a shared lock on the scope's row when
    its floor equals the token (SELECT ... FOR SHARE, as Go's sqlfence):
    transactions of one token run side by side and write nothing to the
    fence table, and a raise by a higher token waits for them. When the
    floor must move (or on SQLite, MySQL and an unknown driver, every time)
    it is one UPDATE of the row, which writes it and which other
    transactions of the scope wait for; a scope's first check also inserts
    the row. On MySQL and MariaDB at REPEATABLE READ (their default) the
    first checks of a new scope by two transactions at once can end one of
    them in a deadlock error (1213, InnoDB's gap locks): its transaction was
    rolled back, run it again.

    The check fences only the writes that commit in its transaction: the
    fence row's lock, held until COMMIT, is what keeps a newer holder's
    raise from committing in between. On a connection in autocommit mode
    (sqlite3's isolation_level=None or autocommit=True without a BEGIN,
    psycopg2's and psycopg's autocommit = True, PyMySQL's autocommit(True))
    each statement commits on its own and the check protects nothing:
    fence_sql raises RuntimeError when the connection says no transaction is
    open after the check (sqlite3, mysql-connector: in_transaction;
    psycopg2, psycopg: info.transaction_status; PyMySQL: the server's
    in-transaction flag). Other drivers are not asked."""
    conn = getattr(cur, "connection", None)
    driver = _driver(cur, conn)
    kind = _dialect(driver, dialect)
    p = param if param is not None else _placeholder(driver)
    scope = held.scope
    if kind == "mysql":
        _check_engine(cur, conn, table, p)
        # Bytes: the column is binary, and the scope must be the same bytes
        # Go's sqlfence writes (UTF-8), whatever the connection's charset.
        scope = held.scope.encode("utf-8")
    admitted = False
    if kind == "postgres":
        # The shared check, as Go's sqlfence runs it: when the token equals
        # the floor (a holder writing again), a shared lock on the row is
        # enough; a raise waits for it. A row that fails token = N is not
        # locked (PostgreSQL locks only the rows it returns), so the
        # UPDATE below, when it runs, upgrades nothing.
        cur.execute(f"SELECT 1 FROM {table} WHERE scope = {p} AND token = {p} FOR SHARE", (scope, held.token))
        admitted = cur.fetchone() is not None
    if not admitted:
        # The UPDATE alone when the row exists; only when it matches nothing
        # is the row inserted at 0 (nothing if another transaction has it)
        # and the UPDATE run again; a token below the floor matches nothing
        # either time. MySQL reports changed rows, not matched ones: writes
        # = writes + 1 makes the row change when the token equals the floor.
        update = f"UPDATE {table} SET token = {p}, writes = writes + 1 WHERE scope = {p} AND token <= {p}"
        cur.execute(update, (held.token, scope, held.token))
        if cur.rowcount != 1:
            if kind == "mysql":
                insert = f"INSERT INTO {table} (scope, token, writes) VALUES ({p}, 0, 0) ON DUPLICATE KEY UPDATE scope = scope"
            else:
                insert = f"INSERT INTO {table} (scope, token, writes) VALUES ({p}, 0, 0) ON CONFLICT (scope) DO NOTHING"
            cur.execute(insert, (scope,))
            cur.execute(update, (held.token, scope, held.token))
        admitted = cur.rowcount == 1
    if _in_transaction(conn) is False:
        raise RuntimeError("fence_sql: no transaction is open on the cursor's connection (autocommit): "
                           "the check committed on its own and would not fence the writes after it; "
                           "BEGIN first (sqlite3 with isolation_level=None: BEGIN IMMEDIATE), or turn autocommit off")
    if not admitted:
        # The floor, read in the same transaction (the row exists now): for
        # the message, as Go's fencing.StaleError and coordctl sql name it.
        cur.execute(f"SELECT token FROM {table} WHERE scope = {p}", (scope,))
        row = cur.fetchone()
        floor = row[0] if row else None
        raise StaleError(f"stale token {held.token} in scope {held.scope!r}: the floor is {floor} "
                         "(a newer holder has written; roll back)", held.token, held.scope, floor)


def _driver(cur, conn):
    """The top-level module of the DB-API driver of cur: its connection's
    class's, or, when that is not one fence_sql knows (a driver whose
    cursors keep no public .connection), its cursor's."""
    mod = _module_of(conn)
    return mod if mod in _DIALECT_MODULES else _module_of(cur)


def _dialect(driver, dialect):
    """fence_sql's dialect: "mysql", "postgres", "sqlite", or None (a driver
    it does not know: PostgreSQL's and SQLite's common SQL, the exclusive
    check only)."""
    if dialect is None:
        return _DIALECT_MODULES.get(driver)
    names = {"mysql": "mysql", "mariadb": "mysql", "postgres": "postgres", "postgresql": "postgres",
             "sqlite": "sqlite", "sqlite3": "sqlite"}
    if dialect not in names:
        raise ValueError(f"dialect {dialect!r}: want postgres, mysql or sqlite")
    return names[dialect]


def _module_of(obj):
    """The top-level module of obj's class ("pymysql", "psycopg2", ...)."""
    return type(obj).__module__.split(".")[0] if obj is not None else ""


def _placeholder(driver):
    """The placeholder of the DB-API module driver: "?" for paramstyle qmark
    (and for a module that does not say), else "%s"."""
    mod = sys.modules.get(driver)
    return "%s" if getattr(mod, "paramstyle", "qmark") in ("format", "pyformat") else "?"


# The (connection, table) pairs whose engine _check_engine has seen InnoDB,
# by connection, forgotten with the connection. A connection class that
# takes no weak reference is asked every time.
_engines_checked = weakref.WeakKeyDictionary()


def _check_engine(cur, conn, table, p):
    """Raise RuntimeError unless MySQL's table is InnoDB: on another engine
    the check's row lock is not held until COMMIT and nothing rolls back, so
    a stale writer's writes could land after a newer holder's. Asked once
    per connection and table (an ALTER TABLE ... ENGINE afterwards is not
    seen), as fencing/sqlfence asks once per Fence."""
    try:
        seen = _engines_checked.setdefault(conn, set())
    except TypeError:
        seen = set()
    if table in seen:
        return
    schema, _, name = table.rpartition(".")
    cur.execute("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE("
                f"{p}, DATABASE()) AND TABLE_NAME = {p}", (schema or None, name))
    row = cur.fetchone()
    if row is None:
        raise RuntimeError(f"fence_sql: no table {table!r}: create it first with coordkit.FENCE_TABLE_MYSQL")
    engine = row[0].decode() if isinstance(row[0], bytes) else row[0]
    if (engine or "").lower() != "innodb":
        engine = engine or "a view or has no engine"
        raise RuntimeError(f"fence_sql: table {table!r} is {engine}, not InnoDB: its row locks are not held until "
                           "COMMIT and its writes do not roll back, so it cannot fence (ALTER TABLE "
                           f"{table} ENGINE=InnoDB, or create it with coordkit.FENCE_TABLE_MYSQL)")
    seen.add(table)


def _in_transaction(conn):
    """Whether conn has a transaction open: True, False, or None when the
    driver does not say."""
    v = getattr(conn, "in_transaction", None)
    if isinstance(v, bool):
        return v
    status = getattr(getattr(conn, "info", None), "transaction_status", None)
    if isinstance(status, int):  # libpq's: IDLE 0, ACTIVE 1, INTRANS 2, INERROR 3, UNKNOWN 4
        return None if status == 4 else status != 0
    if _module_of(conn) == "pymysql":
        status = getattr(conn, "server_status", None)
        if isinstance(status, int):  # the last answer's flags: SERVER_STATUS_IN_TRANS is 1
            return bool(status & 1)
    return None


class Client:
    """A client of one agent. token: the agent's --api-token-file token;
    token_file: a file holding it instead, read at each request (a rotated
    Kubernetes Secret is followed, as the agent follows it)."""

    def __init__(self, url="http://127.0.0.1:4050", token=None, connect_timeout=10.0, token_file=None):
        """connect_timeout (seconds) bounds connecting and every read
        request; a hold waits no longer than its timeout and connect_timeout
        more for the agent's answer."""
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https"):
            raise ValueError(f"url {url!r}: want http:// or https://")
        if token is not None and token_file is not None:
            raise ValueError("token and token_file: give one")
        self._url = f"{u.scheme}://{u.netloc}"
        self._https, self._host, self._port = u.scheme == "https", u.hostname, u.port
        self._token, self._token_file, self._timeout = token, token_file, connect_timeout
        self._read_token()  # a missing or empty file is an error now, not at the first request

    def _read_token(self):
        """The token to send: token, or token_file's content as it is now."""
        if self._token_file is None:
            return self._token
        with open(self._token_file, encoding="utf-8") as f:
            tok = f.read().strip()
        if not tok:
            raise ValueError(f"token_file {self._token_file}: the file is empty")
        return tok

    def _conn(self, timeout):
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=timeout)

    def _headers(self, body):
        h = {"Accept": "application/json, application/x-ndjson"}
        if body:
            h["Content-Type"] = "application/json"
        tok = self._read_token()
        if tok:
            h["Authorization"] = "Bearer " + tok
        return h

    def lock(self, name, timeout=None, try_once=False, shared=False, prefix="", on_lost=None):
        """An exclusive (or shared) lock; acquired by `with` or .acquire()."""
        body = {"name": name, "mode": "shared" if shared else "exclusive"}
        return Hold(self, "/v1/lock", body, timeout, try_once, prefix, on_lost)

    def semaphore(self, name, limit, timeout=None, try_once=False, prefix="", on_lost=None):
        """A slot of the semaphore name with limit slots (.slot, .scope)."""
        return Hold(self, "/v1/semaphore", {"name": name, "limit": limit}, timeout, try_once, prefix, on_lost)

    def campaign(self, name, id, timeout=None, prefix="", on_lost=None):
        """Leadership of the election name, proclaiming id, while held."""
        return Hold(self, "/v1/election/campaign", {"name": name, "id": id}, timeout, False, prefix, on_lost)

    def get(self, path, **query):
        """GET a read endpoint (/v1/lock/status, /v1/election/leader, ...)."""
        q = urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        headers = self._headers(False)
        conn = self._conn(self._timeout)
        try:
            conn.request("GET", path + ("?" + q if q else ""), headers=headers)
            resp = conn.getresponse()
            if resp.status != 200:
                raise _error_of(resp)
            return json.loads(resp.read())
        except (OSError, http.client.HTTPException) as e:
            raise CoordError("unavailable", self._unreachable(e)) from e
        finally:
            conn.close()

    def _unreachable(self, err):
        """What a request that got no answer says: refused, reset, not resolved, timed out."""
        if isinstance(err, TimeoutError) and err.errno is None:
            return f"no answer from the agent at {self._url} within connect_timeout {self._timeout:g}s: its host or the network to it is gone"
        return f"cannot reach the agent at {self._url}: {err}"

    def lock_status(self, name, prefix=None):
        return self.get("/v1/lock/status", name=name, prefix=prefix)

    def leader(self, name, prefix=None):
        """The leader's id (None when there is none) and token."""
        d = self.get("/v1/election/leader", name=name, prefix=prefix)
        return d.get("leader"), d.get("token", 0)


class Hold:
    """One hold. After acquire: token, scope, key, lease, slot (semaphores),
    lease_deadline (a time.time() value) and lost (bool). A background thread
    reads the stream; on loss it calls on_lost(reason) and check() raises."""

    def __init__(self, client, path, body, timeout, try_once, prefix, on_lost):
        if timeout is not None and try_once:
            raise ValueError("timeout and try_once exclude each other")
        self._client, self._path, self._on_lost = client, path, on_lost
        self._body = dict(body)
        if prefix:
            self._body["prefix"] = prefix
        if timeout is not None:
            self._body["timeout"] = timeout
        if try_once:
            self._body["try"] = True
        self._conn = self._resp = self._sock = self._reader = self._read_error = None
        self._lock = threading.Lock()
        self._ended = threading.Event()
        self._settled = threading.Event()  # clear while acquire() runs
        self._settled.set()
        self._released = False
        self.lost, self.reason = False, None
        self.token = self.scope = self.key = self.lease = self.slot = None
        self.lease_deadline = None
        self._expires = None  # monotonic: the lease deadline as last told

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
        return False

    def acquire(self):
        """Block until held; raise NotAcquired (busy, timeout, or cancelled:
        release() was called, from another thread, while it waited) or
        CoordError."""
        with self._lock:
            if self._conn is not None or not self._settled.is_set():
                raise RuntimeError("a Hold is acquired once; make a new one")
            if self._released:
                raise NotAcquired("cancelled", "released before it was acquired")
            self._settled.clear()
        # The reader thread starts now and waits for `go`: starting a thread
        # once granted would delay acquire's return (0.1-1 ms; threading's
        # start() even waits for the thread to run).
        go = _thread.allocate_lock()
        go.acquire()
        self._reader = _thread.start_new_thread(self._read, (go,))
        try:
            headers = self._client._headers(True)
            self._conn = self._client._conn(self._client._timeout)
            try:
                self._conn.request("POST", self._path, body=json.dumps(self._body).encode(), headers=headers)
            except OSError as e:
                raise self._unanswered(self._client._unreachable(e)) from e
            with self._lock:
                self._sock = self._conn.sock  # kept: the response may own it alone
                released = self._released
            if released:  # release() came while connecting: it saw no socket to close
                self._sock.shutdown(socket.SHUT_WR)
            # Waiting takes as long as the agent lets it, but an agent whose
            # host is gone (or the network to it) answers nothing, ever: with
            # a timeout (or try_once), no longer than that and connect_timeout
            # more; without one, until TCP keepalive finds the host gone.
            wait = self._body.get("timeout", 0 if self._body.get("try") else None)
            _keepalive(self._sock)
            self._sock.settimeout(None if wait is None else wait + self._client._timeout)
            try:
                resp = self._conn.getresponse()
            except OSError as e:
                raise self._unanswered(_no_answer(wait, self._client._timeout, e)) from e
            if resp.status != 200:
                err = _error_of(resp)
                self._conn.close()
                raise err
            self._resp = resp
            while True:
                ev = self._next()
                if ev is None:
                    self._conn.close()
                    if self._released:
                        raise NotAcquired("cancelled", "released while it waited")
                    if self._read_error is not None:
                        raise CoordError("unavailable", _no_answer(wait, self._client._timeout, self._read_error))
                    raise CoordError("unavailable", "the stream ended before the hold was granted")
                if ev["event"] == "error":
                    self._conn.close()
                    cls = NotAcquired if ev.get("code") in ("busy", "timeout") else CoordError
                    raise cls(ev.get("code", ""), ev.get("message", ""))
                if ev["event"] == "acquired":
                    break
            self.token, self.scope, self.key = ev["token"], ev.get("scope"), ev.get("key")
            self.lease, self.slot = ev.get("lease"), ev.get("slot")
            self._deadline(ev)
            if self._released:  # release() came with the grant: the agent releases it
                raise NotAcquired("cancelled", "released while it waited")
        except BaseException:
            self._reader = None
            raise
        finally:
            go.release()
            self._settled.set()
        return self

    def _unanswered(self, message):
        """The error of a request the agent did not answer (closing it):
        cancelled if release() came meanwhile, else unavailable."""
        self._conn.close()
        if self._released:
            return NotAcquired("cancelled", "released while it waited")
        return CoordError("unavailable", message)

    def _next(self):
        try:
            line = self._resp.readline()
        except Exception as e:  # a closed or broken stream, however http.client reports it
            self._read_error = e
            return None
        if not line:
            return None
        return json.loads(line)

    def _deadline(self, ev):
        # The time left, counted down on this machine's clock: lease_deadline
        # is the agent's wall clock, which this machine's may be off by any
        # amount (used only from an agent that does not send the time left).
        left = ev.get("lease_remaining_s")
        if left is None:
            d = ev.get("lease_deadline")
            if not d:
                return
            left = _parse_time(d) - time.time()
        self.lease_deadline = time.time() + left
        self._expires = time.monotonic() + left

    def _read(self, go):
        with go:
            if self._reader is None:  # not acquired
                return
        reason = "the stream ended (agent gone or connection lost)"
        while True:
            # An agent gone silent (a partition, a frozen host: no FIN
            # reaches us) ends the hold at the lease deadline, as check()
            # would, on_lost included: the read waits no longer than that.
            left = self._expires - time.monotonic() if self._expires is not None else None
            if left is not None and left <= 0:
                reason = _NO_NEWS
                break
            try:
                self._sock.settimeout(left)
            except OSError:
                pass
            ev = self._next()
            if ev is None:
                if self._expires is not None and time.monotonic() >= self._expires:
                    reason = _NO_NEWS
                break
            if ev["event"] == "held":
                self._deadline(ev)
            elif ev["event"] == "lost":
                reason = ev.get("reason", "lost")
                break
            elif ev["event"] == "released":  # the agent deleted the key
                reason = "released"
                break
        if reason == _NO_NEWS:
            try:  # the agent, if it is still there, releases the key
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._lose(reason)

    def _lose(self, reason):
        with self._lock:
            if self.lost:
                return
            released = self._released
            self.lost, self.reason = True, reason
        self._ended.set()
        if self._on_lost and not released:
            self._on_lost(reason)

    def check(self):
        """Raise LostError if the hold is lost, or its lease deadline passed
        without news from the agent (a stalled stream). Cheap: call it often."""
        if not self.lost and self._expires is not None and time.monotonic() >= self._expires:
            self._lose(_NO_NEWS)
        if self.lost:
            raise LostError(self.reason)

    def wait_lost(self, timeout=None):
        """Block until the hold is lost (True) or timeout passes (False)."""
        return self._ended.wait(timeout)

    def release(self, wait=10.0):
        """Release: end the request; the agent deletes the key at once and
        says so on the stream, which this waits for (up to wait seconds).
        Called from another thread while acquire() waits, it gives up the
        wait: acquire() raises NotAcquired (code "cancelled") once the
        agent has removed the waiting key."""
        with self._lock:
            self._released = True  # acquire() sees it, or this sees its socket
        inside = self._reader == threading.get_ident()  # release() from on_lost
        end = time.monotonic() + wait
        for how in (socket.SHUT_WR, socket.SHUT_RDWR):  # a half close first: the answer can still come
            with self._lock:
                sock = self._sock
            if sock is not None:
                try:
                    sock.shutdown(how)
                except OSError:
                    pass
            if inside:
                break
            # A hold still waiting ends with acquire(); a granted one when
            # its reader sees the stream end.
            if self._settled.wait(max(0.0, end - time.monotonic())) and (
                self._reader is None or self._ended.wait(max(0.0, end - time.monotonic()))
            ):
                break
        self._lose("released")
        if self._resp is not None:
            self._resp.close()
        if self._conn is not None:
            self._conn.close()


_NO_NEWS = "no news from the agent before the lease deadline"


# TCP keepalive on a hold's connection, so that a wait without a timeout
# ends once the agent's host is gone: a first probe after 5 s of silence,
# then 3 more 2 s apart (where the system lets a program set them: Linux,
# and macOS with Python 3.10 or later; elsewhere the system's own).
_KEEPALIVE = (("TCP_KEEPIDLE", 5), ("TCP_KEEPALIVE", 5), ("TCP_KEEPINTVL", 2), ("TCP_KEEPCNT", 3))


def _keepalive(sock):
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for name, value in _KEEPALIVE:
            if hasattr(socket, name):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)
    except OSError:
        pass


def _no_answer(wait, grace, err):
    """What a wait that ended without the agent's answer says."""
    if isinstance(err, TimeoutError) and err.errno is None and wait is not None:  # the socket timeout
        return ("no answer from the agent within %gs (the timeout, and connect_timeout %gs more): "
                "its host or the network to it is gone" % (wait + grace, grace))
    return "no answer from the agent: %s (its host or the network to it is gone?)" % err


def _error_of(resp):
    """The CoordError of a non-200 answer: the agent's code and message, or
    http_STATUS with the body's start when something else answered (a
    proxy's HTML page)."""
    body = resp.read()
    try:
        err = json.loads(body).get("error", {})
        return CoordError(err.get("code", "http_%d" % resp.status), err.get("message", ""), resp.status)
    except (ValueError, AttributeError):
        return CoordError("http_%d" % resp.status, body[:200].decode("utf-8", "replace"), resp.status)


def _parse_time(s):
    """RFC 3339 with up to nanoseconds and a Z, as Go writes it."""
    s = s.replace("Z", "+00:00")
    if "." in s:
        head, rest = s.split(".", 1)
        i = next((k for k, c in enumerate(rest) if c in "+-"), len(rest))
        s = head + "." + rest[:i][:6].ljust(6, "0") + rest[i:]
    return datetime.fromisoformat(s).timestamp()
