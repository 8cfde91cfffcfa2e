// Package election is fenced leader election on etcd.
//
// An Election named N keeps one key per candidate under the prefix "N/",
// "N/<lease id in hex>", on the candidate's lease; the leader is the
// candidate with the lowest create revision. This is exactly the layout of
// etcd's concurrency.Election and `etcdctl elect`, so coordkit candidates and
// theirs campaign against each other on one name, and a fleet can migrate
// one process at a time.
//
// # What it guarantees
//
//   - Every leadership has a fencing token, the create revision of its key.
//     Leaders of one election are granted in create-revision order, so each
//     leader's token is strictly greater than every earlier leader's. A
//     resource that admits only tokens ≥ the highest it has seen (package
//     fencing) rejects the writes of a deposed leader.
//   - Campaign returns a Leadership only if, at that instant, our key is the
//     oldest under the prefix and our session's local deadline has not
//     passed. If the session ends or our key disappears while waiting, it
//     returns ErrSessionExpired. (etcd's Campaign can return success after
//     its own key expired while it waited: a phantom win.)
//   - Loss is signalled by Lost/Context as soon as we can know it: at the
//     session's local deadline (the send time of the last successful
//     keepalive plus the TTL minus a margin: before the server can expire
//     the lease), when the lease is revoked, and when our key is deleted
//     or re-created behind our back (a watch on it).
//   - Resign and Proclaim are fenced by the create revision: a stale
//     Resign never deletes a newer leader's key, a stale Proclaim never
//     overwrites it (ErrNotLeader).
//   - Handover is fast: a waiting candidate hears its predecessor's
//     resignation at once, where etcd's own Campaign waits up to 100 ms for
//     etcd's watch loop (why: lock/mutex.go, attempt.wait).
//   - Observe reports every change of leader, including "no leader".
//
// # What it does not guarantee
//
//   - Mutual exclusion in real time. A leader that was paused (GC, SIGSTOP,
//     a slow disk) after its last Alive check can still act after its
//     lease expired and another candidate won. No client-side check can
//     close that window; fencing tokens do, at the resource.
//   - That a leader learns of loss before the server expires its lease if
//     clocks run at rates that differ by more than the session margin.
//   - Fairness beyond create-revision order, or liveness while etcd has no
//     quorum.
package election
