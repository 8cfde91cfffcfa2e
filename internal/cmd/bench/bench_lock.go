package benchcmd

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/bench/lockbench"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

func newBenchLockCmd(f *cmdutil.Factory, harness func(context.Context, lockbench.Options) (lockbench.Result, error)) *cobra.Command {
	opts := lockbench.Options{}
	python := "python3"
	cmd := &cobra.Command{
		Use:   "lock [--iterations N] [--handoffs N] [--duration D] [--hold D] [--workers 2,8,32] [--unsafe-no-fsync] [--against redsync --redis ADDR] [--against pg-advisory --dsn DSN] [--against api] [--against redis-py,psycopg] [--python PATH] [--crash-handoffs N]",
		Short: "Compare coordkit's lock with etcd's concurrency.Mutex (and redsync on Redis, PostgreSQL advisory locks)",
		Long: `Start an embedded single-member etcd in a temporary directory (fsync on, as a
user would run it, unless --unsafe-no-fsync) and measure, side by side in one
run, coordkit's lock and go.etcd.io/etcd/client/v3/concurrency.Mutex:

  uncontended_p50_ms   one client locks and unlocks, median of --iterations
  uncontended_kv_requests_per_op, uncontended_watch_requests_per_op
                       etcd requests each client sends per uncontended
                       lock+unlock (Txn, Range, DeleteRange; watch creates
                       and cancels), counted on its connection
  handoff_p50_ms       two clients take turns; from the holder's code calling
  handoff_p99_ms       its release to the waiter's acquire returning in its
                       code, both read on CLOCK_MONOTONIC inside the clients'
                       own processes (--handoffs samples); the holder releases
                       --hold after the waiter queued, and each client queues
                       again after a random pause; the implementations take
                       turns in blocks of 25 handoffs
  contended_N_per_s    N clients lock and unlock as fast as they can for
                       --duration: handoffs per second (acquisitions by
                       another client than the last holder)

A second table breaks the uncontended lock+unlock down by what it sends, in
the same run: bare clientv3 clients send concurrency.Mutex's requests, then
add in turn coordkit's acquire Txn (the put alone when nothing is under the
name; else the put, a keys-only read and the N/limit read), its loss watch
(which coordkit opens only for a hold longer than 10ms, so not here) and the
compare-and-delete release of a lock on a shared session (a lock on sessions
of its own, as here, releases with a plain delete); added_us is a step's p50
less the one before, and a library's less the step that sends its requests
(plus_coordkit_acquire_txn for coordkit).

Each client has its own connection and session. concurrency.Mutex's waiter
watch lands in etcd's unsynced watcher group, served by a loop every 100ms,
so short critical sections (the default --hold) pay up to 100ms per handoff
and a longer hold hands off as fast as coordkit (try --hold 150ms); coordkit's
watches are synced from the start (the comment on attempt.wait in lock/mutex.go). Results go to stdout,
progress to stderr. The ratio column is how many times better coordkit did.

--against redsync --redis ADDR adds two columns measured on the Redis server
at ADDR (keys under a random coordkit:bench-lock:... prefix, deleted at the
end): redsync (github.com/go-redsync/redsync/v4 over go-redis v9) with its
default options, as a user runs it (8s expiry, 32 tries, a random 50..250ms
retry delay), and redsync_min_retry, the same with WithRetryDelay(0), the
least redsync accepts: its waiters retry back to back. A redsync waiter
polls; nothing wakes it on release, and nothing stops the releaser taking
the lock back. In the handoff test its waiters never give up (tries 2^30);
in the contended runs they keep the default 32 tries, and the rows
contended_N_lock_failed count the Lock calls that gave up (redsync.ErrFailed
or "lock already taken"), each retried. An ADDR that does not answer within
3s is an error (exit 1) before anything runs.

--against pg-advisory --dsn DSN adds the column pg_advisory: a session-level
pg_advisory_lock(key) on PostgreSQL, each client on its own lock connection
(key: the first 8 bytes of SHA-256 of a random per-run name; TCP keepalives
idle 2s, interval 1s, count 2 on both ends, set with SET tcp_keepalives_* on
the server). A waiter blocks in pg_advisory_lock and the server wakes it. It
adds the crash handoff rows, crash_handoff_p50_ms, _p99_ms and _max_ms
(--crash-handoffs samples): a holder process ('coordctl check pg-advisory-lock', or 'coordctl
lock --ttl 2s' for coordkit) is killed with SIGKILL while a waiter queues, and
the waiter's wait from the kill is measured; etcd_concurrency has no holder
process there ("-", null in JSON). PostgreSQL sees a killed client's socket
close at once; a partitioned one only when its keepalives give up (4s with
these settings, two hours and more with the defaults), which is not measured.
A DSN whose server does not answer within 3s, or refuses the connection (no
such database or role, a wrong password), is an error (exit 1).

--crash-handoffs N alone (without PostgreSQL) measures coordkit's crash
handoff only, in the rows crash_handoff_p50_ms, crash_handoff_p99_ms and
crash_handoff_max_ms. A waiter right behind a killed holder revokes its lease
once LeaseTimeToLive shows it expired (read every 10ms once it reads 1s),
instead of waiting for etcd's expiry check (every 500ms): the handoff is at
most the TTL after the holder's last keepalive plus the reads, the
revocation and the wake-up (docs/locks.md).

--against api adds the column api_python: the coordination API (coordctl
agent's handler, docs/api.md) served in this process on loopback over the same
etcd, each client a python3 process (--python) using clients/python's
coordkit.py (one HTTP request per hold; release waits for the agent's
"released"), driven over a pipe. Its handoff is read inside the Python
processes (time.monotonic_ns, the CLOCK_MONOTONIC the bench reads with
clock_gettime), so the pipe's round trips, which an in-process Go client does
not pay, are not in it; handoff_driven_p50_ms shows the handoff as the bench
sees it, pipe included. It adds the crash handoff rows as against pg-advisory
(crash_handoff_p50_ms, _p99_ms, _max_ms; --crash-handoffs samples, 50 for a
p99 worth the name): a Python holder SIGKILLed while a waiter queues (its
connection closes, the agent deletes the key), next to coordkit's 'coordctl
lock --ttl 2s' holder (its lease must expire); the waiter's grant is read by
its own clock. And three rows of one agent under load: load_100x10_per_s,
acquisitions per second of 100 clients on 10 locks for --duration: a 'coordctl
agent' process (this binary) with 100 HTTP clients in this process (each hold
one request as coordkit.py makes it), next to 100 coordkit library clients;
load_100x10_agent_cpu_us_per_acq, the agent process's CPU (user+system, from
/proc, 10 ms ticks) per acquisition; load_100x10_bench_cpu_us_per_acq, this
process's (the embedded etcd and the clients) per acquisition.

--against redis-py (with --redis ADDR) and --against psycopg (with --dsn DSN)
add the locks a Python team reaches for, from one python3 process per client
like api_python (--python must import redis and psycopg2: Debian's
python3-redis, python3-psycopg2): redis_py, redis-py's Lock (timeout 10s, its
default 0.1s polling; no fencing token), and psycopg, a session-level
pg_advisory_lock through psycopg2. Their crash handoff holders are the same
programs (the redis-py holder renews a 2s timeout every third of it, as a
long holder must: its waiter gets the lock when the key expires).

-w json prints {"benchmark":"lock","fsync":BOOL,"rows":[{"metric","coordkit",
"etcd_concurrency","unit"}...]}; against redsync the object also has
"redis":ADDR and each row "redsync" and "redsync_min_retry"; against
pg-advisory "postgres":"HOST:PORT/DB", "keepalive" and each row "pg_advisory";
against api "api":true and each row "api_python"; against redis-py and psycopg
each row "redis_py", "psycopg" (null where not measured);
the breakdown is "uncontended_breakdown":[{"step","p50_ms","added_ms",...}].`,
		Example: `  coordctl bench lock
  coordctl bench lock -w json
  coordctl bench lock --iterations 500 --handoffs 300 --duration 5s
  coordctl bench lock --against redsync --redis 127.0.0.1:6379
  coordctl bench lock --against pg-advisory --dsn postgres://root@127.0.0.1:5432/test
  coordctl bench lock --against api --workers 8
  coordctl bench lock --against api,redis-py,psycopg --redis 127.0.0.1:6379 --dsn postgres://root@127.0.0.1:5432/test --python /usr/bin/python3 --crash-handoffs 50
  coordctl bench lock --crash-handoffs 40`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			opts.Progress = f.IO.ErrOut
			if slices.ContainsFunc(opts.Against, func(a string) bool {
				return a == lockbench.AgainstAPI || a == lockbench.AgainstRedisPy || a == lockbench.AgainstPsycopg
			}) {
				py, err := exec.LookPath(python)
				if err != nil {
					return fmt.Errorf("--against api, redis-py and psycopg run Python clients: %w", err)
				}
				opts.Python = py
			}
			crash := opts.DSN != "" || opts.Python != "" || cmd.Flags().Changed("crash-handoffs")
			if crash && opts.Coordctl == "" {
				var err error
				if opts.Coordctl, err = f.Executable(); err != nil {
					return fmt.Errorf("find coordctl for the crash handoff's holder processes: %w", err)
				}
			}
			return runBench(ctx, f, "lock", lockbench.ErrOptions, harness, opts)
		}),
	}
	fl := cmd.Flags()
	fl.IntVar(&opts.Iterations, "iterations", 200, "uncontended lock+unlock rounds per implementation")
	fl.IntVar(&opts.Handoffs, "handoffs", 100, "handoffs measured per implementation")
	fl.DurationVar(&opts.Duration, "duration", 3*time.Second, "length of each contended run")
	fl.DurationVar(&opts.Hold, "hold", time.Millisecond, "in the handoff test, how long the holder keeps the lock after the waiter queued")
	fl.IntSliceVar(&opts.Workers, "workers", []int{2, 8, 32}, "contending clients of each contended run (2..256)")
	fl.BoolVar(&opts.NoFsync, "unsafe-no-fsync", false, "run etcd without fsync (faster, not what users run)")
	fl.StringSliceVar(&opts.Against, "against", nil, "also measure these locks: redsync (needs --redis), pg-advisory (needs --dsn), api (the coordination API from Python clients; needs python3)")
	fl.StringVar(&opts.Redis, "redis", "", "the Redis server (host:port) of --against redsync")
	fl.StringVar(&opts.DSN, "dsn", "", "the PostgreSQL database of --against pg-advisory")
	fl.StringVar(&python, "python", "python3", "the python3 of --against api, redis-py and psycopg (redis-py and psycopg need its redis and psycopg2 modules: Debian's python3-redis, python3-psycopg2)")
	fl.IntVar(&opts.CrashHandoffs, "crash-handoffs", 5, "crash handoffs measured per lock (given alone: coordkit's only)")
	return cmd
}
