// Package sembench measures coordkit's semaphore (package semaphore) on one
// embedded single-member etcd that it starts in a temporary directory (fsync
// on unless Options.NoFsync): acquisitions per second at each limit with
// twice as many workers as slots, and the handoff between two workers at
// limit 1 (from Release to the other's Acquire returning). etcd has no
// semaphore; at limit 1 a semaphore is a mutex, so that row and the handoff
// are measured for etcd's concurrency.Mutex too, side by side in the same
// run.
//
// Each worker has its own connection and session. The figures depend on
// the machine and its load; compare the columns of one run, not runs.
// Nothing here checks the limit: the semaphore's tests do.
package sembench
