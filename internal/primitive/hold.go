package primitive

import "time"

// LossWatchDelay is how long a lock's, a semaphore slot's or a candidacy's
// key is held before its loss watch starts (session.HoldConfig): a hold
// released sooner — an uncontended lock and unlock takes a few
// milliseconds — opens no watch at all, and sends what concurrency.Mutex
// sends. A delete behind the holder's back in that time is reported when
// the watch starts, by the one read that covers its gap: at most
// LossWatchDelay plus a watch creation and a read after the grant
// (session/doc.go states the bound, 150ms unless those requests are slower,
// and lock's tests check it against etcd).
const LossWatchDelay = 10 * time.Millisecond
