"""Tests of coordkit.py against a real `coordctl agent` on a real etcd.

Run by internal/cmd/agent's Go tests (make test), which start both and set
COORDKIT_AGENT_URL, COORDKIT_AGENT_TTL (seconds) and COORDKIT_TEST_REVOKE_URL
(revokes the agent's lease, to make its holds lost). By hand:

    coordctl etcd & coordctl agent --listen 127.0.0.1:4050 &
    COORDKIT_AGENT_URL=http://127.0.0.1:4050 python3 -m unittest -v test_coordkit
"""

import http.server
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import unittest.mock
import urllib.parse
import urllib.request
import uuid

import coordkit

URL = os.environ.get("COORDKIT_AGENT_URL", "http://127.0.0.1:4050")
TTL = float(os.environ.get("COORDKIT_AGENT_TTL", "10"))
REVOKE = os.environ.get("COORDKIT_TEST_REVOKE_URL")
WAIT = 30  # seconds: a bound on waits, for a loaded machine

CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
import coordkit
h = coordkit.Client(sys.argv[2]).lock(sys.argv[3]).acquire()
print("held", h.token, flush=True)
time.sleep(3600)
"""


def fresh(name):
    return "pytest-%s/%s" % (uuid.uuid4().hex[:8], name)


class TestCoordkit(unittest.TestCase):
    def setUp(self):
        self.c = coordkit.Client(URL)
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_lock_token_scope(self):
        name = fresh("a")
        with self.c.lock(name, timeout=WAIT) as h:
            self.assertGreater(h.token, 0)
            self.assertEqual(h.scope, name + "/")
            self.assertTrue(h.key.startswith(name + "/"))
            self.assertGreater(h.lease_deadline, time.time())
            h.check()
            st = self.c.lock_status(name)
            self.assertTrue(st["held"])
            self.assertEqual(st["holders"][0]["token"], h.token)
        self.assertTrue(h.lost)
        self.assertEqual(h.reason, "released")
        self.assertRaises(coordkit.LostError, h.check)

    def test_clock_off_the_agents(self):
        # This machine's wall clock 30 s off the agent's, both ways: the hold
        # is neither lost at once nor believed past its lease deadline.
        real = time.time
        for skew in (30.0, -30.0):
            with unittest.mock.patch("time.time", lambda: real() + skew):
                with self.c.lock(fresh("skew"), timeout=WAIT) as h:
                    left = h._expires - time.monotonic()
                    self.assertGreater(left, 0, "skew %+g s: the deadline is already past" % skew)
                    self.assertLessEqual(left, TTL + 1, "skew %+g s: %.1f s left, more than the TTL" % (skew, left))
                    shown = h.lease_deadline - time.time()
                    self.assertTrue(0 < shown <= TTL + 1, "skew %+g s: lease_deadline %.1f s away on this clock" % (skew, shown))
                    # A held line moves the deadline on: with it counted on
                    # this clock the hold is still good.
                    first, until = h._expires, time.monotonic() + 10
                    while h._expires == first:
                        self.assertLess(time.monotonic(), until, "skew %+g s: no held line within 10 s" % skew)
                        time.sleep(0.01)
                    h.check()

    def test_exclusion_try_timeout(self):
        name = fresh("x")
        with self.c.lock(name) as h:
            with self.assertRaises(coordkit.NotAcquired) as e:
                self.c.lock(name, try_once=True).acquire()
            self.assertEqual(e.exception.code, "busy")
            with self.assertRaises(coordkit.NotAcquired) as e:
                self.c.lock(name, timeout=0.2).acquire()
            self.assertEqual(e.exception.code, "timeout")
        with self.c.lock(name, try_once=True) as h2:
            self.assertGreater(h2.token, h.token)

    def test_waiter_gets_lock_on_release(self):
        name = fresh("w")
        got = []
        first = self.c.lock(name).acquire()
        t = threading.Thread(target=lambda: got.append(self.c.lock(name, timeout=WAIT).acquire()))
        t.start()
        self._wait_waiters(name, 1)
        self.assertEqual(got, [])
        first.release()
        t.join(WAIT)
        self.assertEqual(len(got), 1)
        self.assertGreater(got[0].token, first.token)
        got[0].release()

    def test_release_gives_up_a_waiting_acquire(self):
        name = fresh("cancel")
        first = self.c.lock(name).acquire()
        waiting = self.c.lock(name)
        got = []

        def run():
            try:
                waiting.acquire()
                got.append("acquired")
            except coordkit.NotAcquired as e:
                got.append(e.code)

        t = threading.Thread(target=run)
        t.start()
        self._wait_waiters(name, 1)
        start = time.monotonic()
        waiting.release(wait=WAIT)
        took = time.monotonic() - start
        t.join(WAIT)
        self.assertEqual(got, ["cancelled"])
        # It returned when the agent had dropped the waiting key, not after
        # its wait: before, it waited all of it for a "released" that a
        # hold never granted does not get.
        self.assertLess(took, WAIT / 3)
        self.assertEqual(self.c.lock_status(name)["waiters"], [])
        with self.assertRaises(RuntimeError):
            waiting.acquire()  # a Hold is acquired once
        first.release()
        never = self.c.lock(name)
        never.release()  # released before acquire(): acquire gives up at once
        with self.assertRaises(coordkit.NotAcquired) as e:
            never.acquire()
        self.assertEqual(e.exception.code, "cancelled")

    def test_error_page_of_a_proxy(self):
        # Something other than the agent answers (a reverse proxy's HTML
        # page): a CoordError with the status, not a JSON decoding error.
        class BadGateway(http.server.BaseHTTPRequestHandler):
            def answer(self):
                body = b"<html><body>502 Bad Gateway</body></html>"
                self.send_response(502)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = answer

            def log_message(self, *args):
                pass

        srv = http.server.HTTPServer(("127.0.0.1", 0), BadGateway)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        c = coordkit.Client("http://127.0.0.1:%d" % srv.server_address[1])
        with self.assertRaises(coordkit.CoordError) as e:
            c.lock("x").acquire()
        self.assertEqual((e.exception.code, e.exception.status), ("http_502", 502))
        self.assertIn("Bad Gateway", e.exception.message)
        with self.assertRaises(coordkit.CoordError) as e:
            c.lock_status("x")
        self.assertEqual(e.exception.code, "http_502")

    def test_agent_unreachable(self):
        # Nothing listens (refused) or the name does not resolve: a
        # CoordError "unavailable" naming the agent, as for an agent that
        # does not answer, with the socket's error as its cause (it was a
        # bare ConnectionRefusedError, which `except CoordError` missed).
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        c = coordkit.Client("http://127.0.0.1:%d" % port, connect_timeout=5)
        for what in (lambda: c.lock("x", timeout=1).acquire(), lambda: c.lock_status("x"), lambda: c.leader("x")):
            with self.assertRaises(coordkit.CoordError) as e:
                what()
            self.assertEqual(e.exception.code, "unavailable")
            self.assertIn("cannot reach the agent at http://127.0.0.1:%d" % port, e.exception.message)
            self.assertIsInstance(e.exception.__cause__, ConnectionRefusedError)
        with self.assertRaises(coordkit.CoordError) as e:
            coordkit.Client("http://agent.invalid:4050", connect_timeout=5).lock_status("x")
        self.assertEqual(e.exception.code, "unavailable")

    def test_silent_agent_loses_at_the_lease_deadline(self):
        # A proxy that stops passing bytes on both sides: the agent looks
        # frozen (a partition, a stopped host), and no FIN or RST reaches
        # the client. on_lost must come at the lease deadline all the same.
        agent = urllib.parse.urlsplit(URL)
        frozen = threading.Event()
        lsock = socket.create_server(("127.0.0.1", 0))
        self.addCleanup(lsock.close)
        conns = []

        def pipe(src, dst):
            try:
                while True:
                    data = src.recv(65536)
                    if not data:
                        break
                    if not frozen.is_set():
                        dst.sendall(data)
            except OSError:
                pass

        def accept():
            try:
                down, _ = lsock.accept()
            except OSError:
                return
            up = socket.create_connection((agent.hostname, agent.port))
            conns.extend([down, up])
            threading.Thread(target=pipe, args=(down, up), daemon=True).start()
            threading.Thread(target=pipe, args=(up, down), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()

        def close_all():
            for c in conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()

        self.addCleanup(close_all)
        lost = []
        ended = threading.Event()
        c = coordkit.Client("http://127.0.0.1:%d" % lsock.getsockname()[1])
        h = c.lock(fresh("silent"), on_lost=lambda reason: (lost.append(reason), ended.set())).acquire()
        frozen.set()
        start = time.monotonic()
        self.assertTrue(ended.wait(TTL + 10), "on_lost never came")
        waited = time.monotonic() - start
        print("\nsilent agent: lost after %.2f s (TTL %.0f s)" % (waited, TTL), file=sys.stderr)
        self.assertEqual(lost, ["no news from the agent before the lease deadline"])
        self.assertLess(waited, TTL + 1)
        self.assertRaises(coordkit.LostError, h.check)

    def test_crash_releases(self):
        name = fresh("crash")
        here = os.path.dirname(os.path.abspath(__file__))
        child = subprocess.Popen([sys.executable, "-c", CHILD, here, URL, name], stdout=subprocess.PIPE, text=True)
        try:
            line = child.stdout.readline()
            self.assertTrue(line.startswith("held "), line)
            got = []
            t = threading.Thread(target=lambda: got.append((self.c.lock(name, timeout=WAIT).acquire(), time.monotonic())))
            t.start()
            self._wait_waiters(name, 1)
            killed = time.monotonic()
            child.send_signal(signal.SIGKILL)
            t.join(WAIT)
            self.assertEqual(len(got), 1, "the waiter never got the lock")
            handoff = got[0][1] - killed
            print("\ncrash handoff: %.1f ms (TTL %.0f s)" % (handoff * 1000, TTL), file=sys.stderr)
            # Well under the TTL: the agent released when the connection
            # closed; it did not wait for a lease to expire.
            self.assertLess(handoff, TTL / 2)
            self.assertGreater(got[0][0].token, int(line.split()[1]))
            got[0][0].release()
        finally:
            child.kill()
            child.wait()
            child.stdout.close()

    @unittest.skipUnless(REVOKE, "COORDKIT_TEST_REVOKE_URL is not set")
    def test_lost(self):
        name = fresh("lost")
        seen = []
        h = self.c.lock(name, on_lost=seen.append).acquire()
        urllib.request.urlopen(REVOKE + "?lease=" + h.lease, timeout=WAIT).read()
        self.assertTrue(h.wait_lost(WAIT), "no loss reported")
        self.assertEqual(len(seen), 1)
        self.assertIn("lost", seen[0])
        with self.assertRaises(coordkit.LostError):
            h.check()
        h.release()
        self.assertEqual(len(seen), 1, "release after a loss is not a second loss")

    def test_shared_and_semaphore(self):
        name = fresh("rw")
        with self.c.lock(name, shared=True) as r1, self.c.lock(name, shared=True) as r2:
            self.assertNotEqual(r1.token, r2.token)
            with self.assertRaises(coordkit.NotAcquired):
                self.c.lock(name, try_once=True).acquire()
        sem = fresh("sem")
        with self.c.semaphore(sem, 2) as s1, self.c.semaphore(sem, 2) as s2:
            self.assertEqual({s1.slot, s2.slot}, {0, 1})
            self.assertEqual(s1.scope, "%s/slots/%d" % (sem, s1.slot))
            with self.assertRaises(coordkit.NotAcquired) as e:
                self.c.semaphore(sem, 2, try_once=True).acquire()
            self.assertEqual(e.exception.code, "busy")

    def test_campaign(self):
        name = fresh("svc")
        self.assertEqual(self.c.leader(name)[0], None)
        with self.c.campaign(name, id="py-1", timeout=WAIT) as l:
            self.assertEqual(self.c.leader(name), ("py-1", l.token))
        self.assertEqual(self.c.leader(name)[0], None)

    def test_fenced_sqlite_write(self):
        name = fresh("report")
        db = sqlite3.connect(os.path.join(self.tmp.name, "app.db"), isolation_level=None)
        db.execute(coordkit.FENCE_TABLE.format(t="coordkit_fence"))
        db.execute("CREATE TABLE report (id INTEGER PRIMARY KEY, body TEXT)")

        def write(held, body):
            cur = db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                coordkit.fence_sql(cur, held)
                cur.execute("INSERT OR REPLACE INTO report (id, body) VALUES (1, ?)", (body,))
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise

        with self.c.lock(name) as old:
            write(old, "old")
        with self.c.lock(name) as new:
            write(new, "new")
        # The old holder, paused past its loss, comes back and writes: refused.
        with self.assertRaises(coordkit.StaleError) as e:
            write(old, "stale")
        self.assertEqual((e.exception.token, e.exception.scope, e.exception.floor), (old.token, name + "/", new.token))
        self.assertEqual(db.execute("SELECT body FROM report").fetchone()[0], "new")
        self.assertEqual(db.execute("SELECT token FROM coordkit_fence WHERE scope = ?", (name + "/",)).fetchone()[0], new.token)
        db.close()

    def test_bad_request(self):
        with self.assertRaises(coordkit.CoordError) as e:
            self.c.lock("/leading-slash").acquire()
        self.assertEqual(e.exception.code, "bad_request")
        self.assertEqual(e.exception.status, 400)

    def _wait_waiters(self, name, n):
        deadline = time.monotonic() + WAIT
        while len(self.c.lock_status(name)["waiters"]) < n:
            self.assertLess(time.monotonic(), deadline, "no waiter queued")
            time.sleep(0.01)


def _held(token, scope):
    return type("Held", (), {"token": token, "scope": scope})()


class TestFenceSQLite(unittest.TestCase):
    """fence_sql on sqlite3 (no agent: it needs only a token and a scope)."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.path = os.path.join(tmp.name, "app.db")
        db = sqlite3.connect(self.path, isolation_level=None)
        db.execute(coordkit.FENCE_TABLE.format(t="coordkit_fence"))
        db.execute("CREATE TABLE report (id INTEGER PRIMARY KEY, body TEXT)")
        db.close()

    def connect(self, **kw):
        db = sqlite3.connect(self.path, timeout=WAIT, **kw)
        self.addCleanup(db.close)
        return db

    def body(self):
        return self.connect().execute("SELECT body FROM report WHERE id = 1").fetchone()[0]

    def test_autocommit_refused(self):
        # A holder that forgot BEGIN: its check would commit alone, and a
        # newer holder's write could land before its own.
        old = self.connect(isolation_level=None)
        with self.assertRaises(RuntimeError) as e:
            coordkit.fence_sql(old.cursor(), _held(10, "r/"))
        self.assertIn("no transaction is open", str(e.exception))

        new = self.connect(isolation_level=None)
        cur = new.cursor()
        cur.execute("BEGIN IMMEDIATE")
        coordkit.fence_sql(cur, _held(11, "r/"))
        cur.execute("INSERT OR REPLACE INTO report (id, body) VALUES (1, 'new')")
        cur.execute("COMMIT")
        # The old holder, told no, did not write; had it gone on it would be refused now.
        old.execute("BEGIN IMMEDIATE")
        with self.assertRaises(coordkit.StaleError):
            coordkit.fence_sql(old.cursor(), _held(10, "r/"))
        old.execute("ROLLBACK")
        self.assertEqual(self.body(), "new")

    def test_dialect_named(self):
        db = self.connect()
        with self.assertRaises(ValueError) as e:
            coordkit.fence_sql(db.cursor(), _held(7, "r/"), dialect="oracle")
        self.assertIn("want postgres, mysql or sqlite", str(e.exception))
        # sqlite3 named as what it is: the same SQL as found from its module.
        cur = db.cursor()
        coordkit.fence_sql(cur, _held(7, "r/"), dialect="sqlite")
        db.commit()
        self.assertEqual(db.execute("SELECT token, writes FROM coordkit_fence WHERE scope = 'r/'").fetchone(), (7, 1))

    def test_driver_from_the_cursor(self):
        # A driver whose cursors keep no public .connection (mysql-connector's
        # keep _connection) is known by its cursor's module: pure logic.
        cursor = type("MySQLCursor", (), {"__module__": "mysql.connector.cursor"})()
        driver = coordkit._driver(cursor, getattr(cursor, "connection", None))
        self.assertEqual((driver, coordkit._dialect(driver, None)), ("mysql", "mysql"))
        db = self.connect()
        self.assertEqual(coordkit._driver(db.cursor(), db), "sqlite3")
        self.assertEqual(coordkit._dialect("nodb", None), None)

    def test_implicit_transaction_admitted(self):
        # sqlite3's default: the module begins a transaction before the
        # check's INSERT, and the writes commit with it.
        db = self.connect()
        cur = db.cursor()
        coordkit.fence_sql(cur, _held(7, "r/"))
        self.assertTrue(db.in_transaction)
        cur.execute("INSERT OR REPLACE INTO report (id, body) VALUES (1, 'v')")
        db.commit()
        self.assertEqual(self.body(), "v")


def _fence_table(test, db, create):
    """A fence table of a fresh name on DB-API connection db, made by the
    CREATE TABLE template create and dropped when test ends."""
    table = "coordkit_fence_py_" + uuid.uuid4().hex[:8]
    with db.cursor() as cur:
        cur.execute(create.format(t=table))
    db.commit()

    def drop():
        db.rollback()
        with db.cursor() as cur:
            cur.execute("DROP TABLE " + table)
        db.commit()
    test.addCleanup(drop)
    return table


class _TokensPast32Bits:
    """A test of a fence table on a server: self.fence(token) checks and
    commits, self.floor() reads (token, writes) of the scope's row, and
    rewrites is what a second check of the same token adds to writes (0
    where it is the shared check, PostgreSQL; 1 where it is the UPDATE)."""

    def test_tokens_past_32_bits(self):
        big = 2**31 + 5
        self.fence(big)
        self.fence(big)  # the same holder writes again
        self.assertEqual(self.floor(), (big, 1 + self.rewrites))
        with self.assertRaises(coordkit.StaleError) as e:
            self.fence(big - 1)
        self.assertEqual((e.exception.token, e.exception.floor), (big - 1, big))
        self.assertIn(f"stale token {big - 1} in scope 'py/", str(e.exception))
        self.assertIn(f"the floor is {big}", str(e.exception))
        self.assertEqual(self.floor(), (big, 1 + self.rewrites), "a refused write moves nothing")
        self.fence(2**62)
        self.assertEqual(self.floor(), (2**62, 2 + self.rewrites))


class TestFenceSQLPostgres(_TokensPast32Bits, unittest.TestCase):
    """FENCE_TABLE and fence_sql on PostgreSQL through psycopg2, with tokens
    past 32 bits (an etcd revision is 64). No agent: fence_sql needs only a
    hold's token and scope. Run by clients/python's Go test, which sets
    COORDKIT_TEST_PG_DSN to a fresh database; skipped without it."""

    rewrites = 0  # the shared check writes nothing

    def setUp(self):
        dsn = os.environ.get("COORDKIT_TEST_PG_DSN")
        if not dsn:
            self.skipTest("no PostgreSQL: set COORDKIT_TEST_PG_DSN")
        import psycopg2
        self.db = psycopg2.connect(dsn)
        self.addCleanup(self.db.close)
        self.table = _fence_table(self, self.db, coordkit.FENCE_TABLE)

    def fence(self, token, scope="py/pg/"):
        held = _held(token, scope)
        with self.db.cursor() as cur:
            try:
                coordkit.fence_sql(cur, held, table=self.table)  # param: psycopg2's paramstyle
            except BaseException:
                self.db.rollback()
                raise
        self.db.commit()

    def floor(self, scope="py/pg/"):
        with self.db.cursor() as cur:
            cur.execute("SELECT token, writes FROM " + self.table + " WHERE scope = %s", (scope,))
            return cur.fetchone()

    def test_autocommit_refused(self):
        import psycopg2
        conn = psycopg2.connect(os.environ["COORDKIT_TEST_PG_DSN"])
        self.addCleanup(conn.close)
        conn.autocommit = True
        with conn.cursor() as cur:
            with self.assertRaises(RuntimeError) as e:
                coordkit.fence_sql(cur, _held(5, "py/auto/"), table=self.table, param="%s")
            self.assertIn("no transaction is open", str(e.exception))
            # autocommit with an explicit BEGIN is a transaction: admitted.
            cur.execute("BEGIN")
            coordkit.fence_sql(cur, _held(6, "py/auto/"), table=self.table, param="%s")
            cur.execute("COMMIT")
        self.assertEqual(self.floor("py/auto/"), (6, 2))

    def test_one_token_side_by_side_a_raise_waits(self):
        # Two transactions of the floor's token hold the row's lock together
        # (neither waits, with a 1 s lock_timeout); a raise waits for them
        # (here until its lock_timeout, 55P03), and after their COMMITs it
        # goes through and the old token is refused.
        import psycopg2
        from psycopg2 import errors
        scope = "py/side/"
        self.fence(7, scope)

        def conn():
            c = psycopg2.connect(os.environ["COORDKIT_TEST_PG_DSN"])
            self.addCleanup(c.close)
            with c.cursor() as cur:
                cur.execute("SET lock_timeout = '1s'")
            c.commit()
            return c
        a, b, raiser = conn(), conn(), conn()
        for c in (a, b):
            with c.cursor() as cur:
                coordkit.fence_sql(cur, _held(7, scope), table=self.table)
        with raiser.cursor() as cur:
            with self.assertRaises(errors.LockNotAvailable):
                coordkit.fence_sql(cur, _held(8, scope), table=self.table)
        raiser.rollback()
        a.commit()
        b.commit()
        self.assertEqual(self.floor(scope), (7, 1), "the shared checks wrote nothing")
        with raiser.cursor() as cur:
            coordkit.fence_sql(cur, _held(8, scope), table=self.table)
        raiser.commit()
        with self.assertRaises(coordkit.StaleError) as e:
            with a.cursor() as cur:
                coordkit.fence_sql(cur, _held(7, scope), table=self.table)
        a.rollback()
        self.assertEqual(e.exception.floor, 8)
        self.assertEqual(self.floor(scope), (8, 2))


class TestFenceSQLMySQL(_TokensPast32Bits, unittest.TestCase):
    """FENCE_TABLE_MYSQL and fence_sql on MariaDB (or MySQL) through PyMySQL.
    No agent: fence_sql needs only a hold's token and scope. Run by
    clients/python's Go test, which sets COORDKIT_TEST_MYSQL_{HOST,PORT,USER,
    PASSWORD,DB} to a fresh database, and COORDKIT_TEST_GO_FENCED to the
    scope and token Go's sqlfence fenced in table coordkit_fence before;
    skipped without them."""

    rewrites = 1  # the UPDATE every time

    def setUp(self):
        if not os.environ.get("COORDKIT_TEST_MYSQL_HOST"):
            self.skipTest("no MySQL: set COORDKIT_TEST_MYSQL_HOST and the others")
        self.db = self.connect()
        self.table = _fence_table(self, self.db, coordkit.FENCE_TABLE_MYSQL)
        with self.db.cursor() as cur:
            cur.execute("CREATE TABLE IF NOT EXISTS report (id INT PRIMARY KEY, body TEXT) ENGINE=InnoDB")
        self.db.commit()

    def connect(self):
        import pymysql
        e = os.environ
        db = pymysql.connect(host=e["COORDKIT_TEST_MYSQL_HOST"], port=int(e["COORDKIT_TEST_MYSQL_PORT"]),
                             user=e["COORDKIT_TEST_MYSQL_USER"], password=e.get("COORDKIT_TEST_MYSQL_PASSWORD", ""),
                             database=e["COORDKIT_TEST_MYSQL_DB"], charset="utf8mb4")
        self.addCleanup(db.close)
        return db

    def fence(self, token, scope="py/my/", table=None, db=None):
        db = db or self.db
        with db.cursor() as cur:
            try:
                coordkit.fence_sql(cur, _held(token, scope), table=table or self.table)
            except BaseException:
                db.rollback()
                raise
        db.commit()

    def floor(self, scope="py/my/", table=None):
        with self.db.cursor() as cur:
            cur.execute("SELECT token, writes FROM " + (table or self.table) + " WHERE scope = %s",
                        (scope.encode(),))
            row = cur.fetchone()
        self.db.commit()  # a fresh snapshot for the next read (REPEATABLE READ)
        return row

    def test_autocommit_refused(self):
        conn = self.connect()
        conn.autocommit(True)
        with conn.cursor() as cur:
            with self.assertRaises(RuntimeError) as e:
                coordkit.fence_sql(cur, _held(5, "py/auto/"), table=self.table)
            self.assertIn("no transaction is open", str(e.exception))
            # autocommit with an explicit BEGIN is a transaction: admitted.
            cur.execute("BEGIN")
            coordkit.fence_sql(cur, _held(6, "py/auto/"), table=self.table)
            cur.execute("COMMIT")
        self.assertEqual(self.floor("py/auto/"), (6, 2))

    def test_not_innodb_refused(self):
        for engine in ("MyISAM", "MEMORY"):
            table = self.table + "_" + engine.lower()
            with self.db.cursor() as cur:
                cur.execute(coordkit.FENCE_TABLE_MYSQL.format(t=table).replace("InnoDB", engine))
            self.addCleanup(lambda t=table: self.db.cursor().execute("DROP TABLE " + t))
            with self.assertRaises(RuntimeError) as e:
                self.fence(5, table=table)
            self.assertIn(f"is {engine}, not InnoDB", str(e.exception))
            self.assertIsNone(self.floor(table=table), "nothing is written to a table that cannot fence")
        with self.assertRaises(RuntimeError) as e:
            self.fence(5, table=self.table + "_missing")
        self.assertIn("no table", str(e.exception))
        view = self.table + "_view"
        with self.db.cursor() as cur:
            cur.execute(f"CREATE VIEW {view} AS SELECT * FROM {self.table}")
        self.addCleanup(lambda: self.db.cursor().execute("DROP VIEW " + view))
        with self.assertRaises(RuntimeError) as e:
            self.fence(5, table=view)
        self.assertIn("is a view or has no engine, not InnoDB", str(e.exception))

    def test_go_and_python_fence_each_other(self):
        # Go's sqlfence fenced this scope (not ASCII: the same bytes either
        # way) in its own table; Python's holders are ordered with Go's.
        scope, token = os.environ["COORDKIT_TEST_GO_FENCED"].split("\t")
        token = int(token)
        with self.assertRaises(coordkit.StaleError):
            self.fence(token - 1, scope=scope, table="coordkit_fence")
        self.fence(token, scope=scope, table="coordkit_fence")
        self.fence(token + 1, scope=scope, table="coordkit_fence")  # Go's test reads this floor afterwards
        self.assertEqual(self.floor(scope, table="coordkit_fence")[0], token + 1)

    def test_raise_waits_for_an_open_transaction(self):
        # The old holder's transaction is open: the new holder's check waits
        # for its row lock (here until a 1 s lock wait timeout, error 1205),
        # so the old write commits first and every later one of the old
        # holder is refused.
        import pymysql
        old, new = self.connect(), self.connect()
        with old.cursor() as cur:
            coordkit.fence_sql(cur, _held(5, "py/wait/"), table=self.table)
            cur.execute("REPLACE INTO report (id, body) VALUES (1, 'old')")
        with new.cursor() as cur:
            cur.execute("SET SESSION innodb_lock_wait_timeout = 1")
            with self.assertRaises(pymysql.err.OperationalError) as e:
                coordkit.fence_sql(cur, _held(6, "py/wait/"), table=self.table)
            self.assertEqual(e.exception.args[0], 1205, e.exception)  # ER_LOCK_WAIT_TIMEOUT
        new.rollback()
        old.commit()
        with new.cursor() as cur:
            coordkit.fence_sql(cur, _held(6, "py/wait/"), table=self.table)
            cur.execute("REPLACE INTO report (id, body) VALUES (1, 'new')")
        new.commit()
        with self.assertRaises(coordkit.StaleError):
            self.fence(5, scope="py/wait/", db=old)
        with self.db.cursor() as cur:
            cur.execute("SELECT body FROM report WHERE id = 1")
            self.assertEqual(cur.fetchone()[0], "new")
        self.db.commit()
        self.assertEqual(self.floor("py/wait/"), (6, 2))

if __name__ == "__main__":
    unittest.main()
