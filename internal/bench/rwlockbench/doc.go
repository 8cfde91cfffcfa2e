// Package rwlockbench measures coordkit's read-write lock (lock.RWMutex)
// against etcd's recipes.RWMutex (go.etcd.io/etcd/client/v3/experimental/
// recipes), side by side in one run on one embedded single-member etcd that
// it starts in a temporary directory (fsync on unless Options.NoFsync).
//
// Run measures, per implementation: how long the readers queued behind a
// writer wait after the writer calls Unlock (each reader's admission, p50
// and p99 over every reader of every batch); the handoff between two
// writers that take turns (from Unlock to the other's Lock returning, p50
// and p99); and acquisitions per second with 8 readers and 2 writers
// looping on one name. Each participant has its own connection and
// session. The recipe takes no context and cannot be interrupted: Run closes
// the recipe's clients to unblock it when it has to stop early.
//
// The figures depend on the machine and its load; compare the columns of
// one run, not runs. Nothing here checks exclusion: the lock's tests do.
package rwlockbench
