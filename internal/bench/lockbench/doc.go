// Package lockbench measures coordkit's lock against etcd's
// concurrency.Mutex, side by side in one run on one embedded single-member
// etcd that it starts in a temporary directory (fsync on unless
// Options.NoFsync), and, against redsync, against the Redis lock people use
// instead: github.com/go-redsync/redsync/v4 over go-redis v9 on a Redis
// server the caller names, with its default options and with its retry
// delay at 0 (the least it accepts), and, against pg-advisory, a
// PostgreSQL session-level advisory lock (internal/pglock), one lock
// connection per client. With Options.Coordctl it measures the crash
// handoff: holder processes killed, the waiter's wait measured, for
// coordkit (and the advisory lock and the API's Python client when they
// are measured).
//
// Against api, redis-py and psycopg, Python processes are clients too: the
// coordination API (served in this process) through clients/python,
// redis-py's Lock, and pg_advisory_lock through psycopg2, with the crash
// handoff, and (api) one coordctl agent process under 100 clients on 10
// locks, with its CPU per acquisition (agentload.go).
//
// Run measures, per implementation: uncontended lock+unlock (median), the
// handoff from a holder's release call to the waiter's acquire returning,
// read on CLOCK_MONOTONIC in the clients' own processes (median and p99;
// the implementations take turns in blocks), and handoffs per second with
// N contending clients (with the
// Lock calls that gave up, for redsync, whose waiters stop after 32 tries),
// and the uncontended lock+unlock broken down by what it sends
// (breakdown.go: bare clientv3 steps from concurrency.Mutex's requests to
// coordkit's, and its loss watch, which a hold as short as these never
// opens).
// Each client has its own connection and session. The figures depend on the
// machine and its load; compare the columns of one run, not runs. Nothing
// here checks mutual exclusion: the locks' tests and the safety check do.
// Redis keys live under a random per-run prefix, deleted at the end.
package lockbench
