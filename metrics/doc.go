// Package metrics turns what coordkit's locks, semaphores and elections do
// into Prometheus metrics that a program registers on its own registry:
//
//	m := metrics.New()
//	reg.MustRegister(m) // a prometheus.Registerer of the program's
//	mu, err := lock.New(client, "jobs", lock.WithSessionOptions(session.WithObserver(m.Observe)))
//
// One hook feeds it: m.Observe, given to the sessions of the primitives
// with session.WithObserver (through lock's, semaphore's and election's
// WithSessionOptions, or to a session of your own). Every primitive reports
// through its session, so one Collector can watch all of a program's
// locks, slots and leaderships; several Collectors, on several registries,
// can run side by side. Nothing is registered globally.
//
// # What it measures
//
//   - coordkit_acquisitions_total{kind}: keys granted to a holder — locks
//     ("lock", "rlock"), semaphore slots ("semaphore"), leaderships
//     ("election").
//   - coordkit_acquisition_wait_seconds{kind}: how long each of those
//     acquisitions waited, from its start (a campaign on a session of its
//     own: from its lease's grant) to the grant.
//   - coordkit_releases_total{kind}: held keys given up (Unlock, Release,
//     Resign), before any loss.
//   - coordkit_losses_total{kind,reason}: held keys lost while held, by
//     reason: "expired" (no keepalive succeeded before the local deadline),
//     "revoked" (the lease went on the server), "key_gone" (the key was
//     deleted or replaced behind the holder's back), "closed" (its session
//     was closed while it held the key, or left to expire, as Run does
//     without ReleaseOnCancel), "other".
//   - coordkit_session_losses_total{reason}: sessions lost ("expired",
//     "revoked"): each loses whatever it held.
//   - coordkit_keepalive_latency_seconds: the round trip of each successful
//     keepalive, from its send (the instant the deadline is measured from)
//     to its answer.
//   - coordkit_keepalive_failures_total: keepalives that failed without
//     ending their session (it retries until its deadline).
//
// # What it does not measure
//
// Names and keys are not labels: a program may hold thousands of names,
// and a label per name would make as many series. Keys an acquisition
// gave up while it waited (a cancelled Lock, a campaign that ended) are
// not counted, nor is the time a holder then held its key.
package metrics
