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
// HeldKey.watch for why it starts from "now" and reads the key once). The
// watch starts at Hold; HoldConfig.LossWatchDelay can start it later, so
// that a key released sooner — an uncontended lock and unlock — costs its
// two writes and no watch, at the price of hearing of a deletion behind the
// holder's back in that delay only when the watch starts (by the read that
// covers the gap). lock, semaphore and election hold their keys with a
// delay of 10ms (internal/primitive's LossWatchDelay). How late a foreign
// delete is then reported: a delete in the first 10ms of a hold when the
// watch has started and the read covering its gap has answered, that is
// at most the delay plus a watch creation and a read after the grant:
// within 150ms of the delete unless etcd takes longer than that to answer
// those two requests (lock's
// TestLockForeignDeleteRightAfterGrantReportedWithinBound deletes the key
// right after each grant and checks it against etcd: 10–18ms under -race
// at load 20 on 2 cores, and 320ms once when every package's tests ran
// at once); a later delete when its watch event arrives, as before. What it costs a child
// run under the hold: it may overlap the next holder by that much more
// when someone deletes the holder's key in those first milliseconds (the
// fencing token still keeps its writes out). The end of the session (the
// local deadline, a revocation seen by a keepalive, Close) is reported at
// once whenever it comes. Release is a compare-and-delete on the create revision, so a late
// or repeated Release never deletes a newer holder's key (a key held with
// HoldConfig.SoleHandle, where no newer key of its name can exist before
// its end, is deleted plainly the first time), and IsOwner/Txn guard etcd
// transactions with the same comparison.
//
// A lock (lock.Held), a semaphore slot (semaphore.Held) and a leadership
// (election.Leadership) are each a HeldKey, embedded, plus what is theirs
// alone (a name, a slot, their own verb for Release). So the same three
// signals mean the same thing on all of them:
//
//   - Lost() is closed when the key is lost while held: the local deadline
//     passed, the lease was revoked, the session closed, or the key was
//     deleted or replaced. It is never closed by the holder's own release
//     (Release, Unlock, Resign): a loop that selects on Lost sees only
//     losses.
//   - Context() is cancelled at the end of the hold, whichever way it ends:
//     its cause wraps ErrLost and the reason on a loss, ErrNotHeld (or a
//     leadership's ErrResigned) on a release. Bind the protected work to it.
//   - Err() is nil while held, then the same error as Context's cause.
//
// The errors every holder shares (ErrLost, ErrNotHeld, ErrKeyGone,
// ErrNotOwner, ErrGoneWhileWaiting, ErrInvalidName, ErrNameInUse, ErrClosed)
// live here, and lock, semaphore, election and claim return them as they
// are: match session.ErrLost whatever was held. The release policy is in
// Session.Close: after a clean release of a lock or slot the lease is left
// to expire rather than revoked, so a waiter with a lock delay never takes a
// release for a loss.
//
// A key that is deleted behind its holder's back is lost with ErrKeyGone;
// if its lease went with it (revoked, or expired on the server) the reason
// is ErrRevoked as well, and the session ends with ErrRevoked at once (one
// read of the lease tells, before the loss is signalled: HeldKey.loseGone).
//
// # Events
//
// WithObserver sees what a session and its keys do: each keepalive (its
// latency), the session's loss, and for each key granted to a holder
// (HeldKey.Granted, tagged with HoldConfig.Kind by lock, semaphore and election) its
// grant with how long the acquisition waited, then its release or its loss
// with the reason. Package metrics counts them for Prometheus.
//
// # How keepalives are sent
//
// A session sends its keepalives through a Keepaliver: one long-lived
// LeaseKeepAlive stream per etcd client, shared by every session given it
// with WithKeepaliver (a session without one gets a stream of its own).
// For each request the Keepaliver records the instant just before it goes
// on the wire. etcd answers a stream's requests one by one, in order, and
// gRPC delivers them once and in order, so each response is paired with the
// oldest request outstanding for its lease on that stream, and the
// session's deadline moves to that request's send time + the TTL granted −
// margin: the same rule as a keepalive sent alone, and the server received
// the request after that instant. A request whose session stopped waiting
// stays paired until its response comes (dropping it would pair the
// response with a later send); a response with no request outstanding is
// dropped; a broken stream fails every request outstanding on it, and a new
// stream starts with nothing outstanding, so no response is ever measured
// from a send on another stream. While a stream is down it is reopened
// with exponential backoff and full jitter; a keepalive waits 100ms for it
// and then goes out with KeepAliveOnce, measured from its own send as
// before. Deadlines move only with answered keepalives: a session whose
// deadline passes first is lost, as with any keepalive that does not get
// through. Closing a session stops only its own keepalives; the streams
// close with the last session and reopen with the next.
//
// A member that stops gracefully sends GOAWAY and refuses new RPCs at once,
// but would serve a stream already open until the stream ends or its stop
// times out (etcd's request timeout, 7s by default). The Keepaliver ends a
// stream when the client's connection leaves READY (grpc's
// ClientConn.GetState and WaitForStateChange), which a GOAWAY on the
// client's last usable connection causes: the sessions then take the path
// of a stream that is down — the reconnect, to another endpoint if one is
// READY, and KeepAliveOnce meanwhile — and with a single member they are
// lost by their own deadline, as with KeepAliveOnce, instead of the stop's
// timeout later (TestGracefullyStoppingMemberIsNoticed). With several
// endpoints the connection stays READY while one member drains: its stream
// goes on until that member's gRPC server closes it, and the renewals on
// it are real (the member still forwards them to the leader), so the lease
// is not at risk; the stream is then reopened on another member.
//
// A client's sessions share one stream per 128 sessions, up to 64: etcd
// serves a stream's renewals one after another, and on a loaded server one
// can wait there (a linearizable read, the revocation of a lease that
// expired). Their regular keepalives are aligned to a 50ms grid (at most
// 25ms early or late), so that many go out, and come back, in one write.
// While a client has sessions its Keepaliver also keeps one idle watch open:
// clientv3 closes a watch stream with its last watch, and the loss watch of
// each held key would otherwise open and close one per acquisition.
//
// The stream is the default
// (Stats counts the KeepAliveOnce calls made while a stream was down).
// Without it, each keepalive goes with clientv3's KeepAliveOnce (a stream
// opened and closed per keepalive, the way sessions renewed before the
// shared stream, at several times the CPU per keepalive): chosen with
// KeepaliverConfig.WithoutStream, or taken for good when the server refuses the stream
// (Unimplemented). Its deadline is measured from the send of each
// KeepAliveOnce, so it is exactly as safe.
//
// The Keepaliver is not held in a package variable keyed by client: that
// would be a registry shared by everything in the process, which the
// house rules forbid (and which would hide a client's streams from whoever
// owns the client). Whoever creates a client and many sessions on it
// creates the client's Keepaliver next to it and passes it on (coordctl
// bench scale does); lock, semaphore and election take it through their
// WithSessionOptions.
// Two clusters in one process never share one, because each Keepaliver
// belongs to one client. The cost of forgetting it is a stream per session
// instead of per client — more streams, still none opened per keepalive.
//
// On a follower every renewal of a stream is forwarded to the leader in
// turn, so the renewals on one stream queue behind each other there. The
// deadline is still measured from each request's send; what grows with the
// queue is the round trip, not the risk.
//
// # Revoked by a waiter
//
// A lease whose process crashed is revoked by etcd's lessor on a tick every
// 500ms after its expiry, or sooner by the waiter right behind its key
// (lock, semaphore and election: internal/primitive's WatchExpiry), once
// LeaseTimeToLive readings prove that the lease has expired at the server
// (granted TTL ≥ 2s). Such a revocation never comes before the local
// deadline of the holder's session: the chain of readings it rests on
// shows that no renewal took effect after the holder's last accepted
// keepalive, whose deadline (send + TTL − margin) precedes the expiry; and
// a keepalive answered after the deadline is never accepted (Renewed
// above). The session sees it as any revocation: ErrRevoked, if it is
// still running to see it.
//
// # What it does not guarantee
//
// A holder that was paused after its last Alive check can still issue a
// write after its deadline: no client-side check can close that window.
// That is what fencing tokens are for (package fencing): the resource rejects
// the late write.
package session
