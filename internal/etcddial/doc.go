// Package etcddial connects coordctl to etcd and, when that fails, says why.
//
// Dial builds etcd's client from a Config (endpoints, --dial-timeout, TLS
// files, user and password) and checks, within the dial timeout, that at
// least one endpoint answers: clientv3.New does not block, so without the
// check a command's first request would wait for its own timeout instead.
//
// Why etcd's client failed is lost behind gRPC's retries: a wrong CA, a
// rejected client certificate and plain text to a TLS port all end in
// "context deadline exceeded". When no endpoint answers, Dial finds the
// cause again with one raw connection per endpoint: a TCP dial (nothing
// answered: ErrUnreachable), then the TLS handshake etcd's client would make
// (its x509 error, or the server's alert about our certificate: ErrTLS), or,
// on a plain-text endpoint, a TLS handshake to see whether the server speaks
// TLS. When the transport is fine the cause is the answer of the first
// request (a wrong password: ErrAuth).
//
// The errors are worded for coordctl's users: they name the endpoints and
// coordctl's flags (--dial-timeout, --cacert, --cert, --key, --user).
// CheckEndpoint and CheckTLSFiles check an endpoint's syntax and the TLS
// files before anything is dialed; ReadPassword reads --password-stdin's line.
// Flags holds the flags as given: Validate runs those checks on all of them,
// Config turns them into the Config Dial takes.
//
// One cluster per client: fencing tokens are revisions of one etcd cluster,
// and a lock taken on one cluster does not exclude a holder on another. Dial
// asks every endpoint for its status and refuses endpoints that answer with
// different cluster IDs (ErrClusterMismatch, naming each endpoint and its
// cluster); it waits for the others at most 500ms after the first answer,
// and pins the client to the cluster it saw: every later response header,
// and every message of a watch or keepalive stream, from another cluster
// fails with ErrClusterMismatch (an endpoint that was down at Dial is
// checked on its first answer).
//
// Connect is how the long-running commands (the agent, the sidecar) connect:
// started while etcd cannot be reached, they serve and retry (Transient
// errors, paced by ConnectBackoff) instead of exiting, and an etcd that
// answers and refuses ends them at once.
//
// Guaranteed: ErrUnreachable only when nothing answered at any endpoint; a
// client Dial returns has had an answer from at least one endpoint, and
// never returns an answer from a second cluster; a Dial that fails returns
// within the dial timeout (the raw connections of the diagnosis run beside
// the requests from half of it on and end with them), plus the time to
// close what it opened. Not guaranteed: that the client still answers on
// the next request. Unix sockets get no diagnosis beyond the client's own
// error.
package etcddial
