// Package sidecar is the leader-election sidecar behind `coordctl sidecar`:
// it campaigns in one etcd election (package election) on behalf of a
// program written in any language, tells that program over HTTP whether it
// leads and with which fencing token, and can run a command only while it
// leads.
//
// The package is layered. State and Apply are the pure core: events (a
// session came up or ended, a leader was observed, this instance was elected
// or deposed) move a State, and tests drive it without etcd. Tracker holds
// the State for concurrent readers and streams its changes. API serves it:
// /v1/leader, /v1/watch (Server-Sent Events), /v1/resign, /livez, /healthz,
// /readyz and /metrics. Sidecar is the driver: one session (lease) at a
// time, Election.Campaign on it, Election.Observe for the leader, the token
// file and the command. Given a way to connect (Config.Connect) instead of
// a client, it serves before etcd is reached and retries until it is.
//
// What it guarantees:
//   - /readyz answers 200 only while this instance holds the leadership and
//     the leadership is alive at the moment of the request: the local
//     deadline of its lease (send time of the last successful keepalive +
//     TTL − margin) has not passed. A leader cut off from etcd therefore
//     turns unready before its lease can expire on the server, so before any
//     other sidecar can be elected.
//   - Tokens grow strictly from one leader to the next (they are the create
//     revisions of the leader keys).
//   - On a resignation or SIGTERM the instance turns unready first, then the
//     token file is removed, the command is stopped (SIGTERM to its process
//     group, SIGKILL after the grace), and only then the leader key is
//     deleted, so the next leader's command starts after this one is gone.
//   - The token file is written atomically (temporary file, fsync, rename,
//     directory fsync) before the instance reports ready.
//
// What it does not guarantee: that two programs never act as leader at
// once. A process frozen (GC pause, SIGSTOP, a VM stall) after it checked
// /readyz or read the token can act after its lease expired and another
// leader was elected. Only the fencing token, sent with every write and
// checked by the protected resource (package fencing), stops such a write.
// On a loss the command gets SIGTERM at once, but it runs until it exits or
// the kill grace passes; it must fence its writes too.
package sidecar
