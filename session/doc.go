// Package session keeps an etcd lease alive for the locks and leaderships
// that live on it, and decides locally — before the server can — when that
// lease must be treated as lost. It also holds the one thing a lock, a
// semaphore slot and a leadership are: a HeldKey, a key on the session's
// lease whose create revision is the fencing token.
//
// # What it guarantees
//
// The local deadline of a session is the send time of the last keepalive
// that succeeded, plus the TTL the server granted, minus a margin. etcd
// resets a lease's expiry when it receives a keepalive, which is after we
// sent it, so the server cannot expire the lease — and so cannot grant a
// lock or leadership held on it to anyone else — before the local deadline
// (given clocks that run at the same rate to within the margin). Done is
// closed at the local deadline, by a timer that fires at that instant, not
// by a periodic check. Once the deadline has passed the session is lost for
// good, even if a late keepalive would still have succeeded: a process that
// was frozen (SIGSTOP, a long GC pause) past its deadline learns of the loss
// the moment it runs again. Alive reports the same decision synchronously, so
// a holder can check it right before each protected write.
//
// etcd's own clientv3.Lease.KeepAlive measures from the receipt of the
// response and its concurrency.Session notices expiry only when the
// keepalive channel closes, so its holders can learn of a loss after the
// next holder already has the lock.
//
// # Held keys
//
// A HeldKey (Session.Hold) is lost when its session ends or when its key is
// deleted or replaced; one watch per key reports the latter (see
// HeldKey.watch for why it starts from "now" and reads the key once). Release
// is a compare-and-delete on the create revision, so a late or repeated
// Release never deletes a newer holder's key, and IsOwner/Txn guard etcd
// transactions with the same comparison. The errors every holder shares
// (ErrLost, ErrNotHeld, ErrKeyGone, ErrNotOwner, ErrGoneWhileWaiting,
// ErrInvalidName) live here; lock, semaphore, election and claim export
// them under their old names. The release policy is in Session.Close: after
// a clean release of a lock or slot the lease is left to expire rather than
// revoked, so a waiter with a lock delay never takes a release for a loss.
// Lazy is the session of a lock or semaphore handle (given, or its own and
// renewed after a loss).
//
// # What it does not guarantee
//
// A holder that was paused after its last Alive check can still issue a
// write after its deadline: no client-side check can close that window.
// That is what fencing tokens are for (package fencing): the resource rejects
// the late write.
package session
