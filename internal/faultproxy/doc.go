// Package faultproxy is a fault-injecting TCP proxy for etcd members run in
// one process (internal/etcdembed's cluster) and for single clients
// (Pausable, used by the safety checks to freeze one client).
//
// Faults apply per directed link between members numbered 1..n: a Proxy in
// front of a member's peer listener learns who dialed each connection from
// the X-Server-From header etcd's peers send, and applies the fault of the
// link dialer → member to request bytes and member → dialer to response
// bytes. A proxy in front of a client listener applies the member's
// client-link fault both ways.
//
// Guaranteed: a cut holds bytes, never drops them (etcd's peer streams are
// stateful, so a gap would corrupt them), and releases them in order when
// the link heals; a delay holds each write for the delay; Close resets every
// connection, as a dead process's kernel would, and waits for the
// forwarding goroutines. Not modelled: loss, reordering, bandwidth, or any
// fault of a link that does not pass through a proxy.
package faultproxy
