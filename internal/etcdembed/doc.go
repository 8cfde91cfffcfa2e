// Package etcdembed starts a real etcd server (go.etcd.io/etcd/server/v3/embed)
// inside the current process: the single member that `coordctl etcd` serves in
// the foreground and that integration tests start on free loopback ports.
//
// It guarantees that Start returns only once the member serves client
// requests (it has elected itself leader), and that Close stops it and waits
// for its goroutines. It does not make the data directory safe to share:
// one running member per directory.
package etcdembed
