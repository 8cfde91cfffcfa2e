// Package coordapi is coordkit's coordination API over HTTP: fenced locks
// (exclusive and shared), semaphore slots and election campaigns by name,
// for programs in any language. coordctl agent serves it (docs/api.md).
//
// A hold is one streaming request. POST /v1/lock, /v1/semaphore or
// /v1/election/campaign answers with newline-delimited JSON events: at most
// one "waiting", then "acquired" (token, scope, key, lease deadline) or
// "error"; while held, a "held" line every HeldInterval; "lost" (with the
// reason) the moment the library reports the loss, after which the stream
// ends. Closing the request releases what it holds: the key is deleted at
// once (the agent's etcd session stays up), so the next waiter is granted
// in about one etcd commit, not after a lease TTL. A client that shuts down
// only its sending side reads "released" once the key is gone.
//
// Every hold goes through the library (lock.New, lock.NewReader,
// semaphore.New, election.New) on the agent's session: the agent adds no
// second implementation of a held key. A lock or election key is
// NAME/<lease hex>, one per session, so two holds of one name through one
// agent cannot share a session; the agent keeps lanes, sessions it opens
// only when every existing one already holds or waits for that name, and
// closes (Session.Close: the keepalives stop and the lease ends) once
// nothing has held or waited on them for Config.LaneIdle; the first lane
// stays until Close. A semaphore's holds share the first lane.
//
// # What it guarantees
//
//   - The tokens, scopes, FIFO order and loss signals are the library's
//     (packages lock, semaphore, election): "lost" is written when Held.Lost
//     closes, which is before the server can expire the lease.
//   - A stream that ends without "lost" ended because the client went away
//     or the agent shut down; either way the agent released the key (a
//     shutting-down agent writes "lost" with reason "agent shutting down"
//     after releasing).
//   - A request is validated with the library's own rules (names, prefix,
//     limit) before anything is written: a bad one gets an HTTP error status
//     and {"error":{"code":...,"message":...}} with a stable code.
//
// # What it does not guarantee
//
// The agent cannot know that a client stopped working while its connection
// stays open: a frozen process (SIGSTOP, a debugger, a swapped-out VM)
// keeps its socket, and the agent keeps the session's lease alive, so the
// hold is not lost and the next waiter waits until the client resumes or
// its connection closes. That differs from a frozen Go holder, whose
// keepalives stop and whose lease expires after the TTL. It stays safe: a
// client that resumes still holds, or it lost the hold and the fencing
// token, checked by the protected resource, refuses its late writes. A client learns of a loss
// from the stream: one that does not read it (or whose network to the agent
// fails) learns late; the keep-alive lines let it notice a silent agent.
// Holds are as durable as the agent process: when it dies its lease
// expires after the TTL and its holds go with it.
package coordapi
