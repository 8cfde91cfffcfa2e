// Package etcdembed runs real etcd servers (go.etcd.io/etcd/server/v3/embed)
// inside the current process. It holds two things:
//
//   - Start: one member, the etcd that `coordctl etcd` serves in the
//     foreground and that integration tests (through etcdtest) start.
//   - StartCluster: a cluster of 3 (up to 7) members in one process for
//     `coordctl etcd --members 3`, the safety checks and the fault scenarios.
//     Every member's peer and client listener sits behind a fault proxy
//     (internal/faultproxy), so members can be stopped, isolated, cut per
//     directed link, delayed or blackholed from clients; Status reports the
//     members, the leader and the active faults.
//
// Ports: URLs left empty in the config get free loopback ports. A free port
// is found by listening and closing, so another process can take it before
// etcd (or a proxy) binds it; when the ports were chosen here, Start and
// StartCluster choose new ones and try again. Explicit URLs are used as
// given, and a port in use is an error; Start checks its ports before it
// starts etcd, so that the error is one line ("peer URL …: address already
// in use") rather than etcd's log with a stack trace.
//
// TLS: Config.ClientTLS serves clients over https only, optionally requiring
// client certificates (with etcd's auth enabled, their common name is the
// user). Peers always speak plain http on loopback.
//
// Guaranteed: Start returns only once the member serves client requests (it
// has elected itself leader); StartCluster once every member serves clients;
// Close stops the members (and proxies) and waits for their goroutines. Not
// guaranteed: a data directory is not safe to share (one running member per
// directory), and the cluster's faults model a network, not disks: etcd in
// the cluster may run without fsync (ClusterConfig.UnsafeNoFsync).
package etcdembed
