// Package safety is a Jepsen-style check of coordkit's claim that a fenced
// lock (or leadership) protects a resource where an unfenced one does not.
//
// Run starts a real three-member etcd cluster in this process with every
// peer and client link behind a fault-injecting proxy
// (internal/etcdembed.Cluster), and the protected resource
// (fencing.Resource, fenced or not). Clients contend for one lock or one
// election; while they hold it they increment a counter in the resource by
// read-modify-write, fencing first and sending their token with every
// request. A seeded nemesis (Schedule) isolates members and the leader,
// cuts clients off a member, stops and restarts members, and freezes the
// current holder past its TTL: in process, by pausing the holder's own
// proxies (its keepalives) and its work between its read and its write; and,
// with Config.Coordctl, by SIGSTOP of a real `coordctl lock` process and
// the command it runs. With Config.Python those process clients are Python
// programs (rmw.py) that hold coordkit's mutex through the coordination API
// or, with redsync, take redis-py's Lock on redsync's key; kill-client
// SIGKILLs them while they hold.
//
// Two consumer-side interfaces make the check pluggable. Lock (one per
// client, granting Tenures with a token, a fencing scope and a slot) is the
// lock under test: coordkit's Mutex, RWMutex (odd clients write, even
// clients read and share), Semaphore (a counter and scope "safety/slots/i", the slot's key, per
// slot) and Election, or redsync on Redis (no token: the harness numbers
// the grants with a Redis INCR to order them, and never fences with that
// number; the etcd faults do not apply, only freeze-client and
// sigstop-child), or a PostgreSQL advisory lock (internal/pglock: one lock
// connection per client through a fault proxy, the counter in the same
// database through a pool; its token is nextval of a run's sequence taken
// on the lock connection, used to fence only in fenced mode; faults
// freeze-client, sigstop-child and cut-lock-conn, which holds the lock
// connection in its proxy and, after the keepalive bound, ends its server
// process as the server does when its keepalives give up). Resource is the protected resource: coordkit's reference
// store (fenced, unfenced, or If-Match: each write conditional on the
// version read) or a counter row per slot in a SQL database, fenced with
// fencing/sqlfence.
//
// Check is the checker, pure logic over a recorded History (the clients'
// operations with call and return times, and the resource's audit log),
// each slot's counter on its own:
//
//   - stale-admitted: the resource accepted a write whose token was below a
//     token it had already admitted (an earlier write in its log, or a fence
//     that returned before the write was sent);
//   - lost-update: an accepted write did not build on the previous one;
//     LostUpdates = accepted writes − final counter value;
//   - overlapping holders: holders that sent a write after a later holder
//     had been granted the lock (a fact about the lock, not a violation:
//     with fencing those writes are refused);
//   - linearizability of reads, writes and fences against a register with a
//     fencing floor (porcupine), with writes of unknown outcome resolved by
//     the log;
//   - acked-missing and unexplained-write: the log and the clients disagree.
//   - too-many-holders: with fencing, more holders live at once in the log
//     than the lock admits (a holder is live from just after the write its
//     read-modify-write built on to its last accepted write).
//
// With If-Match, a late write that built on the latest version is
// admitted whatever its token, so stale-admitted is not checked there; lost
// updates are.
//
// Suite is what coordctl check runs: a run per seed (three per seed for
// the redsync and pg-advisory comparisons, Arms), on the internal/sweep
// engine that coordctl lab sweep drives, the seed the grid's one parameter
// (RunSuite). Verdict, Row and Summary are how a run and a table of runs
// print; a failed run records its schedule and prints the one command that
// replays it (ReplayCommand, RecordSchedule, LoadSchedule); ShrinkCheck
// delta-debugs a failing run's schedule (Shrink). Suite.Validate holds every
// rule of the check's flags, so the command restates none. Runs in
// parallel (Suite.Parallel) share the CPUs and so change what a
// timing-sensitive check finds; one at a time is the default.
//
// What it guarantees: a fenced run that reports no violations saw none in
// the history it recorded, for the faults it injected. What it does not:
// it is a test, not a proof. Schedules replay exactly from a seed, but which
// member leads or which client holds the lock when a step fires depends on
// timing, so two runs of one seed differ in detail. Operations of the
// process clients are recorded with the whole life of their process as
// their interval (their clocks are not ours), which is sound but weakens
// what the checker can see about them. Peer faults are per member, not per
// directed pair (see etcdembed.Cluster). etcd runs with fsync off: stopped
// members are closed cleanly, and no machine crash is simulated.
package safety
