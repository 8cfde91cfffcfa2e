// Package lockbench measures coordkit's lock against etcd's
// concurrency.Mutex, side by side in one run on one embedded single-member
// etcd that it starts in a temporary directory (fsync on unless
// Options.NoFsync).
//
// Run measures, per implementation: uncontended lock+unlock (median), the
// handoff from a holder's Unlock to the waiter's Lock returning (median
// and p99), and acquisitions per second with N contending clients. Each
// client has its own connection and session. The figures depend on the
// machine and its load; compare the two columns of one run, not runs.
// Nothing here checks mutual exclusion: the lock's tests do.
package lockbench
