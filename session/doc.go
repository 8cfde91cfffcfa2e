// Package session keeps an etcd lease alive for the locks and leaderships
// that live on it, and decides locally — before the server can — when that
// lease must be treated as lost.
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
// # What it does not guarantee
//
// A holder that was paused after its last Alive check can still issue a
// write after its deadline: no client-side check can close that window.
// That is what fencing tokens are for (package fencing): the resource rejects
// the late write.
package session
