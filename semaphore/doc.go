// Package semaphore is a fenced, FIFO counting semaphore on etcd: at most N
// holders at once, each in a numbered slot with its own fencing token.
//
//	s, err := semaphore.New(client, "jobs/encoders", 3)
//	held, err := s.Acquire(ctx)
//	defer held.Release(context.Background())
//	// work under held.Context(); send held.Token() with held.Scope()
//	// ("jobs/encoders/slots/1", the slot's key) to the protected resource
//	// (package fencing).
//
// # Layout
//
// The semaphore named N lives under "N/" (WithPrefix adds a namespace):
//
//	N/limit            the limit, stored by the first acquirer (no lease)
//	N/queue/<lease>-<handle>-<n>
//	                   one waiter (one Acquire), on its session's lease; FIFO by
//	                   create revision. A waiter of the previous version,
//	                   N/queue/<lease>, is a waiter all the same.
//	N/slots/<i>        the holder of slot i, on its session's lease
//
// # Fencing with N holders
//
// One floor per name cannot work when N tokens are live at once: the
// holders' tokens interleave. Each holder gets a slot i in [0, limit) and a
// token, the create revision of its slot key N/slots/i; the protected
// resource fences per scope "N/slots/i", the slot's key with the prefix
// (Held.Scope): never a lock's scope, whatever its name. Successive holders of one
// slot get growing tokens, so a holder frozen in slot i is refused once
// slot i was handed to someone else and they wrote or fenced; other slots
// are not affected. fencing.Guard, the reference resource and the SQL helper
// take the scope as it is.
//
// # What it guarantees
//
//   - Never more than limit holders as etcd sees it, at any revision: a slot
//     is taken by one transaction that creates N/slots/i only if that key
//     does not exist, no slot key was created since the read that counted
//     fewer than limit holders, the stored limit is the Semaphore's, and the
//     taker's queue key is still its own.
//   - FIFO: waiters are served in the order their queue keys were created.
//     Only the head of the queue looks at the slots; the others each watch
//     the one waiter before them. A release wakes only the head; its grant
//     deletes its queue key, which wakes only the next waiter. No herd.
//   - Loss is signalled before the server can expire the lease (package
//     session's local deadline), and when the slot key is deleted or
//     replaced (a watch from "now" on the key, started when the slot is
//     taken, plus one read for the gap). Held.Lost and Held.Context
//     end then.
//   - No phantom acquisition: an Acquire that ends without a slot (context
//     done, TryAcquire, error) removes its queue key, and if the outcome of
//     its grant transaction is unknown, removes the slot key it may have
//     created (matched by a value unique to the attempt).
//   - Fenced release: Release deletes the slot key only if it still has the
//     hold's create revision.
//   - A waiter whose own key or session vanishes gets session.ErrGoneWhileWaiting,
//     never a slot.
//   - WithLockDelay(d): the head of the queue, when it saw a slot's holder
//     lost (key deleted, lease gone), waits d after the deletion before it
//     takes that slot; a clean Release costs nothing.
//
// # Changing the limit
//
// The limit lives in N/limit, written by the first Acquire. A Semaphore
// whose limit differs gets a error matching ErrLimitMismatch from Acquire;
// its waiters get it at their next look. SetLimit overwrites the stored
// limit: grants after it use the new limit. Holders keep their slots: after
// a lower limit, slots at or above it stay held until released, and no new
// slot is granted while limit or more are held. Each slot keeps its own
// fencing scope across limit changes.
//
// # What it does not guarantee
//
// As with package lock: no client-side check stops a paused holder from
// writing after its lease expired; only the resource's check of the token
// (per slot scope) does. The lock delay is a second line of defence and
// only as good as what the head of the queue saw: a loss that happened while
// nobody waited, or before a waiter arrived, costs the next holder no delay.
// Scopes are per slot, so a resource cannot tell from the tokens alone how
// many holders are live at once; the limit is enforced by etcd, not by the
// resource. Local loss detection assumes the local clock and the etcd
// leader's clock run at the same rate to within the session margin. The
// limit key has no lease and stays after the last holder is gone.
//
// # Many holders through one handle, and no weighted Acquire
//
// Every Acquire is its own holder: goroutines that share one Semaphore (and
// its session, or a session given WithSession) queue and hold separately,
// FIFO among themselves and with other processes. There is no weighted
// Acquire(ctx, n): fencing is per slot, so a holder of n slots would hold n
// tokens in n scopes, and a resource could not check "this writer holds n
// slots" with one token. A caller that needs n units acquires n times and
// fences each write with the slot it uses.
package semaphore
