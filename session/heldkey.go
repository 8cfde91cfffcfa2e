package session

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
)

// HeldKey is a key held on a session's lease: the one thing a lock, a
// semaphore slot and a leadership are. Its create revision is the fencing
// token. It is held from Hold until Release or until it is lost — the
// session ended (local deadline passed, lease revoked, Close) or the key was
// deleted or replaced behind the holder's back — and Lost, Context and Err
// say which moment that is.
//
// It lives in package session because it is defined by the lease: a key is
// held exactly as long as the session it is attached to, and the release
// policy (see Session.Close) is a decision about that lease.
type HeldKey struct {
	s   *Session
	key string
	rev int64
	cfg HoldConfig

	ctx    context.Context
	cancel context.CancelCauseFunc
	lost   chan struct{}

	stopSess   func() bool
	cancelWait context.CancelFunc // ends the loss watch
	watchDone  chan struct{}      // closed when the loss watch has ended or will never start
	watchTimer *time.Timer        // starts the loss watch (nil: started at once); set under mu

	relMu sync.Mutex // serializes Release calls

	mu       sync.Mutex
	err      error // nil while held
	lossErr  error // set by a loss that came before Release
	released bool  // Release's delete went through
	// releaseSent is set once Release has sent a delete: a Release after
	// that (a retry) compares the create revision whatever SoleHandle says.
	releaseSent bool
	ended       bool // no longer held in any sense; onEnd ran
	// releasing is set while Release's delete is in flight: a loss seen then
	// (our own delete, on the watch) is Release's to settle (pendingLoss).
	releasing   bool
	pendingLoss bool
	granted     bool // Granted was called: the end is reported to the observer
	reported    bool // the end was reported
}

// HoldConfig says how a key Hold holds behaves around its end. The zero
// value is a plain held key.
type HoldConfig struct {
	// OnEnd is called once, when the key is held in no sense any more:
	// after a Release whose delete went through, or on loss (also a loss
	// after a Release whose request failed). A lock uses it to let its
	// Mutex be locked again. It runs on the goroutine that saw the end and
	// must not block.
	OnEnd func()
	// ReleaseCause is Err and the cause of Context after Release (nil: an
	// error wrapping ErrNotHeld). An election sets its ErrResigned.
	ReleaseCause error
	// ReleaseKeepsLease makes a clean Release of the key keep the lease
	// from being revoked by the session's Close (see Session.Close): for
	// keys whose waiters may use a lock delay, which tell a release from a
	// loss by the lease. Locks and semaphore slots set it; leaderships do
	// not.
	ReleaseKeepsLease bool
	// LossWatchDelay starts the key's loss watch this long after Hold
	// instead of at once (0, the default), so a key released sooner never
	// opens one: an uncontended lock+unlock then costs its two writes and no
	// watch create and cancel (docs/benchmarks.md, "the uncontended path",
	// measures what that saves). What it gives up: a key deleted or
	// replaced behind its holder's back (an operator's delete, the lease
	// revoked elsewhere) within the delay is reported that much after Hold
	// plus one read, instead of at once — possibly after the next holder's
	// Lock returned, so a child run under the hold may overlap the next
	// holder by up to that long (the fencing token still keeps its writes
	// out). Once the watch starts, one read covers whatever happened to the
	// key since its creation (see watch), so nothing is missed, only
	// reported later. A session's own end (the local deadline, a revoke
	// seen by a keepalive, Close) is reported at once either way. The
	// default is no delay; lock, semaphore and election use 10ms (the
	// package doc says how late a foreign delete is then reported).
	LossWatchDelay time.Duration
	// Kind names what the key is in the session's events (Event.Kind):
	// "lock", "rlock", "semaphore", "election".
	Kind string
	// SoleHandle says that nothing but the handle holding this key can
	// create a key of its name on the session's lease while it is held:
	// the session is the handle's own (no other handle puts keys on its
	// lease) and the handle holds one key at a time, acquiring the next
	// only after this one ended (primitive.Serially). A key of this name
	// with a newer create revision then cannot exist before this one's
	// end, so Release's first delete of a key not seen lost needs no
	// compare: it is a plain delete (what concurrency.Mutex's Unlock
	// sends; a Txn compare-and-delete costs etcd more — docs/benchmarks.md
	// measures it). A Release after a loss was seen, or after a Release
	// whose request failed, compares the create revision as any other.
	// lock.Mutex sets it when its sessions are its own.
	SoleHandle bool
}

// Granted tells the session's observer that the key was granted to its
// holder, by an acquisition that began at since (the session's clock): a
// lock or a leadership holds its key from the put on, while it waits, and
// is granted later; a semaphore's slot is granted when it is held. From
// then on the key's end (released or lost) is reported too. Calls after
// the first, or after the key ended, do nothing.
func (k *HeldKey) Granted(since time.Time) {
	k.mu.Lock()
	if k.granted || k.ended || k.err != nil {
		k.mu.Unlock()
		return
	}
	k.granted = true
	k.mu.Unlock()
	if k.s.cfg.observer == nil {
		return
	}
	k.s.notify(Event{Key: k.key, Kind: k.cfg.Kind, Held: true, Waited: max(k.s.cfg.clock.Now().Sub(since), 0), Deadline: k.s.Deadline()})
}

// reportEnd tells the observer how a granted key ended, once.
func (k *HeldKey) reportEnd(lost error) {
	k.mu.Lock()
	report := k.granted && !k.reported
	k.reported = true
	k.mu.Unlock()
	if !report || k.s.cfg.observer == nil {
		return
	}
	ev := Event{Key: k.key, Kind: k.cfg.Kind, Deadline: k.s.Deadline(), Released: lost == nil}
	if lost != nil {
		ev.Lost, ev.Err = true, lost
	}
	k.s.notify(ev)
}

// Hold starts holding key, which the caller created at createRev with this
// session's lease, and watches for its loss. It does no I/O before it
// returns: the watch starts in the background (later with
// HoldConfig.LossWatchDelay), and whatever happened to the key between its
// creation and the watch's start is checked by one read (see watch), so
// nothing is missed. A session that has already ended makes the key lost
// at once; the session's end is reported at once at any time.
func (s *Session) Hold(key string, createRev int64, cfg HoldConfig) *HeldKey {
	if cfg.ReleaseCause == nil {
		cfg.ReleaseCause = errReleased
	}
	cfg.LossWatchDelay = max(cfg.LossWatchDelay, 0)
	ctx, cancel := context.WithCancelCause(context.Background())
	wctx, cancelWait := context.WithCancel(context.Background())
	k := &HeldKey{
		s: s, key: key, rev: createRev, cfg: cfg,
		ctx: ctx, cancel: cancel, lost: make(chan struct{}),
		cancelWait: cancelWait, watchDone: make(chan struct{}),
	}
	s.keyHeld()
	k.mu.Lock() // the session may have ended: lose can run at once, and reads stopSess and watchTimer
	k.stopSess = context.AfterFunc(s.Context(), func() { k.lose(s.Err()) })
	if cfg.LossWatchDelay == 0 {
		go k.watch(wctx)
	} else {
		// Not the session's clock: this delay decides when a request is
		// made, not whether the key can be trusted.
		k.watchTimer = time.AfterFunc(cfg.LossWatchDelay, func() { k.watch(wctx) })
	}
	k.mu.Unlock()
	return k
}

// stopWatch ends the loss watch, or keeps it from starting. It does not
// wait for it (watchDone). Safe to call more than once.
func (k *HeldKey) stopWatch() {
	k.cancelWait()
	k.mu.Lock()
	t := k.watchTimer
	k.mu.Unlock()
	if t != nil && t.Stop() {
		close(k.watchDone) // stopped before it fired: watch never runs
	}
}

// Token returns the fencing token: the create revision of the key.
func (k *HeldKey) Token() fencing.Token { return fencing.Token(k.rev) }

// Key returns the key in etcd.
func (k *HeldKey) Key() string { return k.key }

// Lease returns the lease the key is attached to.
func (k *HeldKey) Lease() clientv3.LeaseID { return k.s.Lease() }

// Session returns the session whose lease holds the key.
func (k *HeldKey) Session() *Session { return k.s }

// Lost is closed when the key is lost while held. Release does not close it.
func (k *HeldKey) Lost() <-chan struct{} { return k.lost }

// Context is cancelled when the key is lost (its cause wraps ErrLost and the
// reason) or released (its cause is the release cause, by default wrapping
// ErrNotHeld). Bind the protected work to it. On a loss Lost is closed
// first and Context cancelled right after, so that whoever sees Context end
// finds Lost closed; Err is set before both.
func (k *HeldKey) Context() context.Context { return k.ctx }

// Err returns nil while the key is held; after a loss an error wrapping
// ErrLost and the reason (ErrExpired, ErrRevoked, ErrClosed or ErrKeyGone);
// after Release the release cause.
func (k *HeldKey) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Alive reports at this instant whether the key can still be trusted: not
// lost, not released, and the session's local deadline not passed. Check it
// right before a protected write, and send the token with the write all the
// same: a pause after the check is what fencing catches.
func (k *HeldKey) Alive() bool {
	if k.Err() != nil {
		return false
	}
	if !k.s.Alive() {
		k.lose(k.s.Err())
		return false
	}
	return true
}

// IsOwner returns a comparison that holds exactly while the key is held in
// etcd: it exists with this create revision (the token), as
// concurrency.Mutex.IsOwner. Guard your own etcd transaction with it so
// that its writes commit only while the key is held; Txn does exactly that.
// The comparison is evaluated by etcd at the transaction's revision, so a
// holder paused past its lease cannot commit after its key is gone.
func (k *HeldKey) IsOwner() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(k.key), "=", k.rev)
}

// Txn applies ops in one etcd transaction guarded by IsOwner. It returns
// the response when the guard held and ops were applied; an error wrapping
// ErrNotOwner (and the response) when the key was no longer held in etcd,
// nothing was applied and the key now counts as lost; or the request's
// error, in which case the transaction may or may not have been applied.
func (k *HeldKey) Txn(ctx context.Context, ops ...clientv3.Op) (*clientv3.TxnResponse, error) {
	resp, err := k.s.client.Txn(ctx).If(k.IsOwner()).Then(ops...).Commit()
	if err != nil {
		return nil, fmt.Errorf("session: owner txn on %s: %w", k.key, err)
	}
	if !resp.Succeeded {
		k.loseGone(ctx)
		return resp, fmt.Errorf("%w: key %s with token %d is gone", ErrNotOwner, k.key, k.rev)
	}
	return resp, nil
}

// Release gives the key up: Context is cancelled first (so the holder stops
// acting), then the key is deleted only if it still has this create
// revision, so a late or retried Release never deletes a newer holder's key
// (a compare-and-delete; with HoldConfig.SoleHandle the first delete of a
// key not seen lost is a plain delete, because no newer key of its name can
// exist then).
// If the request fails the key counts as released locally and Release may
// be called again to retry the delete. On a lost key Release still removes
// the key if it is there and returns an error wrapping ErrNotHeld and the
// loss (ErrLost); when the key was not ours any more, one wrapping ErrNotHeld
// and ErrKeyGone; after a Release that went through, ErrNotHeld.
//
// A Release that went through before any loss is clean: see Session.Close
// for what that changes about the lease.
func (k *HeldKey) Release(ctx context.Context) error {
	k.relMu.Lock()
	defer k.relMu.Unlock()
	k.mu.Lock()
	if k.released {
		k.mu.Unlock()
		return ErrNotHeld
	}
	lostErr := k.lossErr
	if k.err == nil {
		k.err = k.cfg.ReleaseCause
	}
	k.releasing = true
	plain := k.cfg.SoleHandle && lostErr == nil && !k.ended && !k.releaseSent
	k.releaseSent = true
	k.mu.Unlock()
	k.cancel(k.cfg.ReleaseCause)

	ours, err := k.deleteKey(ctx, plain)
	k.mu.Lock()
	k.releasing = false
	k.released = err == nil
	pending := k.pendingLoss
	k.mu.Unlock()
	if err != nil {
		if pending {
			k.end(false) // lost while the delete failed: the key is gone or going with the lease
		}
		return fmt.Errorf("session: release %s: %w", k.key, err)
	}
	// The watch is stopped, not waited for: a loss it still reports is
	// ignored now that the key is released (lose), and the release does not
	// wait for clientv3 to tear the watch down.
	k.stopWatch()
	k.end(lostErr == nil && ours && k.cfg.ReleaseKeepsLease)
	switch {
	case lostErr != nil:
		return fmt.Errorf("%w: %w", ErrNotHeld, lostErr)
	case !ours:
		// Gone before the release could delete it: a loss nobody saw.
		k.reportEnd(lostError(k.goneError()))
		return fmt.Errorf("%w: %w", ErrNotHeld, k.goneError())
	}
	k.reportEnd(nil)
	return nil
}

// deleteKey deletes the key: with a plain delete, or only if it still has
// this create revision. ours reports that the key was there to delete (with
// a plain delete, that a key of its name was: see HoldConfig.SoleHandle for
// why it is this one).
func (k *HeldKey) deleteKey(ctx context.Context, plain bool) (ours bool, err error) {
	if plain {
		resp, err := k.s.client.Delete(ctx, k.key)
		if err != nil {
			return false, err
		}
		return resp.Deleted > 0, nil
	}
	resp, err := k.s.client.Txn(ctx).If(k.IsOwner()).Then(clientv3.OpDelete(k.key)).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

// Drop stops holding the key without deleting it: it stays in etcd until
// someone deletes it or its lease ends. Err reports it released. For an
// acquisition that gives up on a key it did not create (another handle on
// the same session may own it).
func (k *HeldKey) Drop() {
	k.mu.Lock()
	if k.err == nil {
		k.err = k.cfg.ReleaseCause
	}
	k.mu.Unlock()
	k.cancel(k.cfg.ReleaseCause)
	k.stopWatch()
	<-k.watchDone
	k.end(false)
	k.reportEnd(nil) // a no-op after a loss, which reported itself
}

// lose records the loss (the first reason wins) unless Release came first;
// either way the key is held in no sense after it.
func (k *HeldKey) lose(reason error) {
	k.mu.Lock()
	if k.released {
		// Released before the loss was seen (the watch's event for our own
		// delete, the session's end): a released key cannot be lost, and
		// Release has settled how it ended.
		k.mu.Unlock()
		return
	}
	if k.releasing {
		k.pendingLoss = true
		k.mu.Unlock()
		return
	}
	if k.err != nil {
		k.mu.Unlock()
		k.end(false)
		return
	}
	err := lostError(reason)
	k.err, k.lossErr = err, err
	k.mu.Unlock()
	// Context before Lost: a holder woken by Lost finds Context done too.
	k.cancel(err)
	close(k.lost)
	k.end(false)
	k.reportEnd(err)
}

// loseGone loses the key, which was found deleted or replaced. Before it
// says so it asks etcd, once and within leaseCheckTimeout, whether the
// lease went too: a revoked lease (an operator's revoke, a lease that
// expired on the server) deletes the key, and its holder must be told that
// reason (ErrRevoked, wrapping ErrKeyGone as well), not only that the key is
// gone; the session then ends with ErrRevoked at once, as its next
// keepalive would have found. The read costs the loss signal one round
// trip: the next holder, woken by the same delete, needs one read too
// before it is granted anything, so the holder still hears first up to the
// scheduler.
func (k *HeldKey) loseGone(ctx context.Context) {
	if !k.s.leaseGone(context.WithoutCancel(ctx)) {
		k.lose(k.goneError())
		return
	}
	// This key's reason is the one with the key in it, not the session's
	// bare ErrRevoked: stop waiting for the session's end before ending it.
	k.mu.Lock()
	stopSess := k.stopSess
	k.mu.Unlock()
	stopSess()
	k.s.lose(ErrRevoked)
	k.lose(fmt.Errorf("%w: %w", ErrRevoked, k.goneError()))
}

// end runs once (clean: a clean release that keeps the lease): it stops watching (without waiting: it may run on the
// watch's goroutine), tells the session, and calls onEnd.
func (k *HeldKey) end(clean bool) {
	k.mu.Lock()
	if k.ended {
		k.mu.Unlock()
		return
	}
	k.ended = true
	stopSess := k.stopSess
	k.mu.Unlock()
	stopSess()
	k.stopWatch()
	k.s.keyEnded(clean)
	if k.cfg.OnEnd != nil {
		k.cfg.OnEnd()
	}
}

func (k *HeldKey) goneError() error { return fmt.Errorf("%w: %s", ErrKeyGone, k.key) }

// Watch back-off after a broken watch: etcd without a leader, a compaction,
// a member restart. A failed read proves nothing; the session's local
// deadline covers a key that cannot be watched.
const (
	watchRetryMin = 50 * time.Millisecond
	watchRetryMax = time.Second
	verifyTimeout = 2 * time.Second
)

// watch is the one loss watcher of a held key: a watch on the key for
// deletes only (a key is never recreated without being deleted first).
//
// It watches from "now", not from the create revision + 1: etcd serves a
// watch that starts at or below its current revision from the unsynced
// group, which a background loop catches up only every 100ms, so a loss in
// that window would be heard up to 100ms late — after the next holder may
// have the key (why: lock/mutex.go, attempt.wait). Instead, when the watch
// reports that it started at a revision after the create revision, the key
// is read once to cover the writes in between; the watch is retried until
// that read answers. When the watch breaks, the same happens again.
func (k *HeldKey) watch(ctx context.Context) {
	defer close(k.watchDone)
	backoff := watchRetryMin
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		gone, verified := k.watchOnce(wctx)
		cancel()
		if gone {
			k.loseGone(ctx)
			return
		}
		if verified {
			backoff = watchRetryMin
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, watchRetryMax)
	}
}

// watchOnce runs one watch until it breaks; gone reports the key lost.
// verified reports that the watch started and covered its gap.
func (k *HeldKey) watchOnce(ctx context.Context) (gone, verified bool) {
	for wr := range k.s.client.Watch(ctx, k.key, clientv3.WithCreatedNotify(), clientv3.WithFilterPut()) {
		if wr.Err() != nil {
			return false, verified
		}
		if wr.Created {
			if wr.Header.Revision > k.rev {
				ours, err := k.stillOurs(ctx)
				if err != nil {
					return false, false // the gap is not covered: watch again
				}
				if !ours {
					return true, true
				}
			}
			verified = true
			continue
		}
		if deletedAfter(wr.Events, k.rev) {
			return true, verified
		}
	}
	return false, verified
}

// stillOurs reads the key: does it still have our create revision?
func (k *HeldKey) stillOurs(ctx context.Context) (bool, error) {
	rctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	resp, err := k.s.client.Get(rctx, k.key)
	if err != nil {
		return false, err
	}
	return len(resp.Kvs) > 0 && resp.Kvs[0].CreateRevision == k.rev, nil
}

// deletedAfter reports whether evs delete the key created at rev. Pure.
func deletedAfter(evs []*clientv3.Event, rev int64) bool {
	for _, ev := range evs {
		if ev.Type == mvccpb.DELETE && ev.Kv != nil && ev.Kv.ModRevision > rev {
			return true
		}
	}
	return false
}
