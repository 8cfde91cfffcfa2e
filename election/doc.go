// Package election is fenced leader election on etcd.
//
// An Election named N keeps one key per candidate under the prefix "N/",
// "N/<lease id in hex>", on the candidate's lease; the leader is the
// candidate with the lowest create revision. This is exactly the layout of
// etcd's concurrency.Election and `etcdctl elect`, so coordkit candidates and
// theirs campaign against each other on one name, and a fleet can migrate
// one process at a time. Only keys of that form are candidates: the keys of
// a name below N (a lock named "N/child") are neither leader nor
// predecessor, and a key of a semaphore's or a read-write lock's layout
// ("N/limit", "N/read/<lease hex>") ahead of every candidate makes Leader,
// Observe and Campaign return an error wrapping session.ErrNameInUse
// (session.ErrNameInUse); Candidates reads every key and returns it for
// any such key. The leader's key is read alone, as concurrency.Election
// reads it, unless the first key is not a candidate.
//
// # What it guarantees
//
//   - Every leadership has a fencing token, the create revision of its key.
//     Leaders of one election are granted in create-revision order, so each
//     leader's token is strictly greater than every earlier leader's. A
//     resource that admits only tokens ≥ the highest it has seen in a scope
//     (package fencing) rejects the writes of a deposed leader; the scope is
//     Leadership.Scope, the key prefix "N/" (with WithPrefix's prefix in
//     front), the same as a lock's of that name (the two exclude each other).
//   - Campaign returns a Leadership only if, at that instant, our key is the
//     oldest candidate under the prefix and our session's local deadline has not
//     passed. If the session ends or our key disappears while waiting, it
//     returns session.ErrGoneWhileWaiting. (etcd's Campaign can return success after
//     its own key expired while it waited: a phantom win.)
//   - Loss is signalled by Lost/Context as soon as we can know it: at the
//     session's local deadline (the send time of the last successful
//     keepalive plus the TTL minus a margin: before the server can expire
//     the lease), when the lease is revoked, and when our key is deleted
//     or re-created behind our back (a watch on it).
//   - Resign and Proclaim are fenced by the create revision: a stale
//     Resign never deletes a newer leader's key, a stale Proclaim never
//     overwrites it (ErrNotLeader).
//   - handover is fast: a waiting candidate hears its predecessor's
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
//   - Fairness beyond create-revision order (unless a policy is chosen,
//     below), or liveness while etcd has no quorum.
//
// # Coordinated election: policies, attributes, ResignTo
//
// By default (PolicyFirstCome, no attributes) an Election writes exactly
// what etcd's concurrency.Election writes and nothing else. With
// WithAttributes or WithPolicy each candidate also publishes its
// Attributes (ID, Priority, Version, Labels) and its policy, and the
// leader can hand leadership to a chosen candidate (ResignTo) or, under a
// preemptive policy, is told to (Leadership.Yield) when a candidate the
// policy prefers is in line. Candidates lists the queue with attributes.
//
// The rule that makes this safe with foreign participants is unchanged:
// the leader is the candidate whose key has the lowest create revision
// under "N/". An `etcdctl elect` or concurrency.Election on the same name
// obeys that rule and nothing else, so a handover never reorders keys (it
// cannot: a create revision is fixed) and never writes anything under "N/"
// but candidate keys. The preferred candidate becomes the leader because
// everyone before it steps aside.
//
// Keys (N is prefix+name):
//
//	N/<lease hex>                    candidate key, value = proclaimed value (etcd's layout)
//	N\x00coord/attr/<lease hex>      its attributes and policy, JSON, same lease,
//	                                 written in the same transaction as the key
//	N\x00coord/handover              {from, from_token, to, to_token}: a handover in
//	                                 progress, on the leader's lease, written only
//	                                 while the leader key is the leader's (IsOwner)
//
// The side keys sit under "N\x00coord/", a sibling of "N/" that sorts
// before it: foreign clients, which take every key under "N/" as a
// candidate, never see them, and no election name without a NUL byte can
// alias them (New refuses such names for coordinated elections). A key
// under "N/" without an attribute key on its lease is a foreign candidate:
// it is never a target and never asked to move.
//
// ResignTo(ctx, id) by the leader L, whose key has revision l, to the
// target T with revision t > l:
//
//  1. L reads the queue at revision R. Every key with a revision below t
//     exists at R (T existed then, and revisions only grow), so the keys
//     that keep T from being the lowest are L's and those between, B.
//     If one of B is foreign it would not step aside: ResignTo returns
//     ErrHandoverBlocked and L keeps leading.
//  2. If B is not empty, L writes the handover record (guarded by IsOwner).
//     Each candidate of B that is campaigning sees it, and re-queues:
//     deletes its key and creates it again, so that its new revision is
//     above t. L keeps leading throughout: nothing before L moves.
//  3. When every key of B is gone (re-queued, or expired with a crashed
//     candidate's lease), L reads T's key once more (gone: ErrNoCandidate,
//     L keeps leading), withdraws the record and resigns: its HeldKey's
//     Release ends the Leadership first (Lost closes, so the holder stops
//     acting), then deletes the key guarded by IsOwner. T is now the lowest
//     key: it leads, for etcd's clients as for ours, and its token t is
//     higher than l. No other candidate led in between: from L's delete on,
//     T's key is below every other.
//
// Who moves when: only the leader writes the record and only the leader
// deletes its own key; only a candidate between the leader and the target
// deletes (its own) key. Nobody deletes another's key: a concurrency.Election
// whose key was deleted behind its back would go on to lead (etcd's Campaign
// does not check its own key after waiting).
//
// Why a crash mid-handover leaves neither two leaders nor none for longer
// than one TTL. Leadership is "the lowest key", and the lowest key changes
// only when it is deleted or its lease expires, so at every instant at most
// one candidate is the lowest, and each of ours acts only after it saw its
// key lowest and stops when the key goes or its local deadline passes
// (before the server can expire the lease): two leaders are impossible
// whoever crashes. As for none: if L crashes, its key and the record go with
// its lease within one TTL; then the lowest remaining key leads (T, or a
// candidate of B that had not re-queued yet). If a candidate of B crashes
// before re-queuing, L keeps leading while its key expires (ResignTo waits,
// bounded by ctx). If T is gone at L's last read, L keeps leading
// (ErrNoCandidate); if it goes between that read and L's delete, the next
// key leads (ResignTo reports ErrTargetGone); if T crashes after, its key
// leads, dead, until its lease expires: one TTL, as for any crashed leader.
//
// Policies (Preference.Next is the pure decision every candidate takes
// from one read of the queue): PolicyPriority, PolicyNewestVersion and
// PolicyOldestVersion name the preferred candidate; ties go to arrival
// order. Unless WithNoPreempt, a leader that is not the preferred one
// sees Yield close and, through Run or the sidecar, hands over by
// ResignTo(Best); it hands over only to a candidate that follows the same
// policy, so two policies cannot pass leadership back and forth. What a
// policy does not do: reorder the waiting candidates. After a leader
// crashes the next key leads, preferred or not, and hands over at once if
// it is not: one more change than a planned handover.
package election
