// Package scalebench measures how the cost of coordkit's lock and election
// grows with the work put on one etcd: queue depth (one lock, W waiters,
// each with its own client and session), many locks (L distinct locks
// taken and released in a loop by 64 workers sharing a few sessions, as a
// service would), many candidates (E elections × C candidates through the
// election package, failover after the leader's crash at TTL 2s), and the
// queue-depth and many-locks curves again on a three-member cluster.
// Where etcd's concurrency package does the same job (Mutex) it runs side
// by side in the same run, in the etcd_concurrency column.
//
// Server-side figures are etcd's own metrics, read from the Prometheus
// registry the embedded server registers in (etcd registers its metrics in
// the process's default registry, so with three members in one process a
// gauge is the sum over the members): etcd_debugging_mvcc_watcher_total,
// etcd_debugging_mvcc_keys_total, etcd_debugging_lease_renewed_total,
// etcd_debugging_mvcc_events_total and etcd_disk_wal_fsync_duration_seconds.
// The server runs in this process, so CPU (getrusage) and RSS
// (/proc/self/status) are the process's: server and clients together, less
// the CPU of the bench's own sampling (every 200ms it gathers etcd's
// metrics, which costs milliseconds: it is timed on its own thread,
// RUSAGE_THREAD, and subtracted). Heap
// per waiter is likewise the process's growth per waiter, client and server
// state together. Every figure depends on the machine and its load;
// compare within one run.
//
// Herd wake-ups are counted with lock.WithOnWait and primitive.Trace.OnLook: each
// Lock that waits reads its predecessor once when it starts waiting and
// once per wake-up; a release that woke more than one waiter is a herd.
//
// Result.Merge joins saved results (coordctl bench scale --from A,B), and
// Result.Charts and WriteSVG draw the queue, locks and candidates curves
// (docs/scale.svg); both are pure.
//
// What Run guarantees, independent of load (its tests check these): the
// counts (wake-ups per release, goroutines per held lock, keys and leases
// left behind) are exact. Nothing here promises a latency or a rate.
package scalebench
