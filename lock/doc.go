// Package lock is a fenced mutual exclusion lock and a fenced read-write
// lock on etcd.
//
//	m, err := lock.New(client, "jobs/nightly", lock.WithTTL(10*time.Second))
//	held, err := m.Lock(ctx)
//	defer held.Unlock(context.Background())
//	// do the work under held.Context(); send held.Token() and held.Scope()
//	// ("jobs/nightly/", the key prefix) with every write to the protected
//	// resource (package fencing) so that it can refuse a holder that lost
//	// the lock without knowing it.
//
// # Layout and compatibility
//
// Keys are laid out exactly as etcd's concurrency.Mutex lays them out: the
// lock named N lives under the prefix "N/" (WithPrefix adds a namespace in
// front), each holder or waiter has the key "N/<lease ID in hex>" attached
// to its session's lease, and the key with the lowest create revision holds
// the lock. coordkit locks, concurrency.Mutex, `etcdctl lock` and etcd's
// Lock RPC on the same name therefore exclude each other, and a fleet can
// move from one to the other a process at a time.
//
// An RWMutex (NewRWMutex) puts readers under "N/read/<lease hex>" and
// writers under "N/write/<lease hex>": the layout of etcd's
// recipes.RWMutex, whose keys are "N/read/<unix nanos>" and
// "N/write/<unix nanos>". A reader waits for every non-reader key created
// before it, a writer for every key created before it, as the recipe does
// (it compares mod revisions, which equal create revisions for keys that
// are written once, as both implementations' are). So coordkit's RWMutex and
// recipes.RWMutex on one name exclude each other both ways, and readers of
// both share. A plain Mutex, concurrency.Mutex or `etcdctl lock` key
// "N/<lease hex>" on the name of an RWMutex is a writer for coordkit's
// RWMutex; recipes.RWMutex readers do not see such keys (they look only
// under N/write), so do not mix a recipe reader with a plain mutex on one
// name.
//
// Status reads holders and waiters of any of these layouts in one read.
//
// # What it guarantees
//
//   - Mutual exclusion as etcd sees it: at any revision at most one key under
//     the prefix is the oldest, and Lock returns only after reading, at one
//     revision, that its own key exists and nothing older does.
//   - FIFO order: waiters are served in the order their keys were created.
//     Each waiter watches only the key just before its own, so a release
//     wakes one waiter, not all of them.
//   - The fencing token (Held.Token) is the create revision of the holder's
//     key. Revisions are global and only grow, and holders are granted in
//     create-revision order, so each holder of a name gets a larger token
//     than every holder before it. (It is not the revision of the response
//     that granted the lock: on the contended path that is later.)
//   - Fast handoff: a waiter hears its predecessor's release at once, where
//     concurrency.Mutex's waiters wait up to 100ms for etcd's watch loop
//     (why: the comment on attempt.wait in mutex.go; `coordctl bench lock`
//     measures both).
//   - Loss is a signal, not a surprise. Held.Lost and Held.Context end when
//     the session's local deadline passes (package session: send time of
//     the last successful keepalive + TTL − margin), which is before the
//     server can expire the lease and grant the lock to the next waiter;
//     and when the holder's key is deleted or replaced (lease revoked,
//     operator delete), which the holder learns from a watch event that the
//     next holder also needs, plus a read, before its Lock returns. That
//     loss watch (one per acquisition, session.HeldKey) starts 10ms into
//     the hold, so a lock held for less (an uncontended lock and unlock)
//     opens none and sends what concurrency.Mutex sends; a delete in those
//     first 10ms is reported when the watch starts, by the read that covers
//     its gap: within 150ms unless etcd is slower than that to answer a
//     watch creation and a read (package session's doc), and so possibly
//     after the next holder's Lock returned.
//   - A crashed holder is replaced at its lease's expiry, not up to 500ms
//     later. etcd's lessor revokes an expired lease on a tick every 500ms;
//     the waiter right behind the holder reads the holder's lease with
//     LeaseTimeToLive (every 10ms once it reads 1s left) and revokes it
//     itself once the readings prove it has expired at the server: a
//     chain of readings of 0 over 1s + 10ms from the first, no gap over
//     500ms, the last one showing the waited-for key on that lease. A
//     renewal in the chain would read 1 or more (granted TTL ≥ 2s), so the
//     holder's last accepted keepalive was renewed before the chain began,
//     and its local deadline (package session: that keepalive's send +
//     TTL − margin) passed before the revocation was sent; keepalives
//     answered after that deadline are not accepted by a coordkit holder.
//     For any holder the lease has expired at the server by then, so the
//     revocation is one the lessor itself would make on its next tick. The
//     full argument and its assumptions are in internal/primitive's
//     expiry.go (WatchExpiry); semaphore and election use the same code.
//     Only for a granted TTL of 2s or more: at 1s a renewal reads 0 at once
//     and cannot be told from an expiry, so such leases are left to etcd.
//     Waiters further back read a renewed lease once a second.
//   - A waiter whose own key or session vanishes while it waits gets
//     session.ErrGoneWhileWaiting, never the lock.
//   - A late or retried Unlock cannot delete a newer lock of the same
//     session. On a shared session (WithSession) Unlock deletes the key only
//     if it still has this lock's create revision. On the Mutex's own
//     sessions no other handle puts keys on their lease and the Mutex holds
//     one lock at a time, so no newer key of the name can exist before this
//     lock ends: its first Unlock of a lock not seen lost is a plain delete,
//     as concurrency.Mutex's (cheaper for etcd than a compare-and-delete
//     Txn), and an Unlock after a loss, or a retry after a failed one,
//     compares (session.HoldConfig.SoleHandle). A Lock that gives up
//     (context done, TryLock) removes its waiting key before returning.
//   - RWMutex: readers share; a writer holds alone. FIFO in arrival order:
//     a reader waits only for the last non-reader key before it, a writer
//     for the key just before it, so a waiting writer holds back the
//     readers behind it (no writer starvation) and a release wakes only the
//     keys that watched it. Tokens are create revisions for both modes;
//     writers' tokens grow from writer to writer, and the resource fences
//     writes by them. A waiting writer whose lease is revoked gets
//     session.ErrGoneWhileWaiting, never the lock (etcd-io/etcd#16221: the recipe let
//     it go on beside the next writer).
//   - WithLockDelay(d): after a holder ahead of a waiter is lost (its key
//     deleted and its lease gone: expired or revoked), the waiter takes the
//     lock no earlier than d after it saw the deletion; after a clean
//     Unlock (key deleted, lease alive) there is no delay. With a delay set
//     a waiter reads every key ahead of it, not only its predecessor, so a
//     reader lost while a writer watched another reader still counts.
//
// # What it does not guarantee
//
// No client-side lock can stop a holder that was paused (GC, SIGSTOP, a
// swapped-out VM) after its last check from writing after its lease
// expired: between Held.Alive returning true and the write reaching the
// resource, any amount of time can pass. The fencing token closes that
// window, but only if the protected resource checks it (fencing.Resource,
// package fencing/sqlfence in a SQL database, or a compare on the token in
// your own store). For data in etcd itself, Held.IsOwner is that compare:
// a transaction guarded by it (or Held.Txn, ErrNotOwner) applies nothing
// once the holder's key is gone. Local loss detection also
// assumes that the local clock and the etcd leader's clock run at the same
// rate to within the session margin. A Mutex's own session is created by its
// first Lock and again after a loss; a Mutex built WithSession cannot outlive
// its session, and its Close does not release a lock still held on it
// (Unlock first). Two Mutexes of one session on one name share a key, as
// with concurrency.Mutex: they are the same lock, not two.
//
// The lock delay is applied by waiters, from what they saw: a holder lost
// while nobody waited costs the next Lock no delay (its key is gone before
// that Lock looks). Close of a Mutex that owns its session revokes the lease,
// so a lock held at Close counts as lost for the delay: Unlock first. A
// clean Unlock never counts as a loss, whatever follows it: a lock is a
// session.HeldKey held with HoldConfig.ReleaseKeepsLease, so once nothing is held on the
// session any more and something was released cleanly, the session's Close
// leaves the lease to expire instead of revoking it (see
// session.Session.Close), and the waiter that looks at the lease finds it. A
// waiter ahead that lost its session while waiting also counts as a loss
// (a waiter cannot tell it from a holder after the fact), which can only
// lengthen the wait. Readers' tokens are not ordered against each other;
// only writers' tokens fence writes. An RWMutex is one participant: its
// read lock and its write lock are held at most once each at a time.
package lock
