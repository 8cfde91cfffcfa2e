// Package check implements coordctl check: Jepsen-style safety checks of
// fenced locks and elections on a real etcd cluster (lock-safety,
// election-safety), and the clients they drive (rmw, redsync-lock,
// pg-advisory-lock, sql-rmw).
package check
