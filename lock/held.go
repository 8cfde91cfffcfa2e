package lock

import (
	"context"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// Held is a lock that was acquired. It is held until Unlock or until it is
// lost; Lost and Context tell which moment that is.
type Held struct {
	m     *Mutex
	s     *session.Session
	kw    *keyWatch
	sub   *keySub
	key   string
	rev   int64
	lease clientv3.LeaseID

	ctx    context.Context
	cancel context.CancelCauseFunc
	lost   chan struct{}
	// stopWatch ends the watch on the session; called by Unlock.
	stopWatch func() bool

	mu       sync.Mutex
	err      error // nil while held
	lossErr  error // set by a loss that came before Unlock
	unlocked bool  // the key is deleted (or was not ours any more)
	semFreed bool
	lostOnce sync.Once
	stopOnce sync.Once
	unlockMu sync.Mutex // serializes Unlock calls
}

// held turns an attempt into a Held and starts watching for its loss.
func (a *attempt) held() *Held {
	ctx, cancel := context.WithCancelCause(context.Background())
	h := &Held{
		m: a.m, s: a.s, kw: a.kw, sub: a.sub, key: a.key, rev: a.rev, lease: a.s.Lease(),
		ctx: ctx, cancel: cancel,
		lost: make(chan struct{}),
	}
	// No goroutine per holder: the session's end and the watch on our key
	// call lose directly.
	h.stopWatch = context.AfterFunc(a.s.Context(), func() { h.lose(a.s.Err()) })
	a.sub.setOnGone(func() { h.lose(goneError(h.key)) })
	return h
}

// Token returns the fencing token: the create revision of the holder's key.
func (h *Held) Token() fencing.Token { return fencing.Token(h.rev) }

// Key returns the holder's key in etcd.
func (h *Held) Key() string { return h.key }

// Lease returns the lease the key is attached to.
func (h *Held) Lease() clientv3.LeaseID { return h.lease }

// Name returns the lock's name.
func (h *Held) Name() string { return h.m.name }

// Shared reports whether this is a read lock of an RWMutex (RLock).
func (h *Held) Shared() bool { return h.m.kind == kindRead }

// Lost is closed when the lock is lost while held: the session's local
// deadline passed (keepalives failing, or the process was frozen), the lease
// was revoked, or the key was deleted or replaced. It is not closed by Unlock.
func (h *Held) Lost() <-chan struct{} { return h.lost }

// Context is cancelled when the lock is lost (its cause wraps ErrLost and
// the reason) or unlocked (its cause wraps ErrNotHeld). Bind the protected
// work to it.
func (h *Held) Context() context.Context { return h.ctx }

// Err returns nil while the lock is held; after a loss an error wrapping
// ErrLost and the reason (session.ErrExpired, session.ErrRevoked,
// session.ErrClosed or ErrKeyGone); after Unlock an error wrapping ErrNotHeld.
func (h *Held) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Alive reports at this instant whether the lock can still be trusted: not
// lost, not unlocked, and the session's local deadline not passed. Check it
// right before a protected write; send the token with the write all the
// same (see the package doc).
func (h *Held) Alive() bool {
	if h.Err() != nil {
		return false
	}
	if !h.s.Alive() {
		h.lose(h.s.Err())
		return false
	}
	return true
}

// Unlock releases the lock: it deletes the holder's key only if it still has
// this lock's create revision, so a late or retried Unlock never deletes a
// newer lock of the same session. If the request fails, the lock counts as
// released locally (Context is cancelled) and Unlock may be called again to
// retry the delete; until it succeeds the Mutex cannot be locked again,
// unless the lock is lost meanwhile (or the Mutex closed). On a lock that was lost Unlock still removes the key if
// it is there, and returns an error wrapping ErrNotHeld and the loss
// (ErrLost); after a successful Unlock it returns ErrNotHeld.
func (h *Held) Unlock(ctx context.Context) error {
	h.unlockMu.Lock()
	defer h.unlockMu.Unlock()
	h.mu.Lock()
	if h.unlocked {
		h.mu.Unlock()
		return ErrNotHeld
	}
	lostErr := h.lossErr
	if h.err == nil {
		h.err = errUnlocked
	}
	h.mu.Unlock()
	h.cancel(errUnlocked)

	resp, err := h.m.client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(h.key), "=", h.rev)).
		Then(clientv3.OpDelete(h.key)).Commit()
	if err != nil {
		return fmt.Errorf("lock: unlock %s: %w", h.key, err)
	}
	h.stopOnce.Do(func() {
		h.stopWatch()
		h.kw.detach(h.sub)
	})
	h.mu.Lock()
	h.unlocked = true
	h.mu.Unlock()
	h.freeSem()
	switch {
	case lostErr != nil:
		return fmt.Errorf("%w: %w", ErrNotHeld, lostErr)
	case !resp.Succeeded:
		return fmt.Errorf("%w: %w", ErrNotHeld, ErrKeyGone)
	}
	return nil
}

// lose records the loss (the first reason wins) unless the lock was
// unlocked first. A loss while an Unlock failed to delete the key still
// frees the Mutex: the key is gone, or its session is, so a new Lock cannot
// meet it again.
func (h *Held) lose(reason error) {
	h.mu.Lock()
	if h.err != nil {
		h.mu.Unlock()
		h.freeSem()
		return
	}
	err := lostError(reason)
	h.err, h.lossErr = err, err
	h.mu.Unlock()
	h.lostOnce.Do(func() { close(h.lost) })
	h.cancel(err)
	h.freeSem()
}

// freeSem lets the Mutex be locked again, once.
func (h *Held) freeSem() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.semFreed {
		h.semFreed = true
		<-h.m.sem
	}
}

// IsOwner returns a comparison that holds exactly while this lock is held
// in etcd: the holder's key exists with this lock's create revision (the
// token), as concurrency.Mutex.IsOwner. Guard your own etcd transaction
// with it so that its writes commit only while the lock is held:
//
//	resp, err := cli.Txn(ctx).If(held.IsOwner()).Then(clientv3.OpPut(k, v)).Commit()
//	if err == nil && !resp.Succeeded {
//		// nothing applied: the lock is no longer held
//	}
//
// Held.Txn does exactly this and turns Succeeded=false into an error
// matching ErrNotOwner.
//
// The comparison is evaluated by etcd at the transaction's revision, so a
// holder paused past its lease cannot commit after its key is gone. It
// does not depend on Held's local state: after Unlock or a loss it is
// simply false in etcd.
func (h *Held) IsOwner() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(h.key), "=", h.rev)
}

// Txn applies ops in one etcd transaction guarded by IsOwner, through the
// Mutex's client. It returns the response when the guard held and ops were
// applied; an error wrapping ErrNotOwner (and the response) when the lock
// was no longer held in etcd and nothing was applied; or the request's
// error, in which case the transaction may or may not have been applied.
func (h *Held) Txn(ctx context.Context, ops ...clientv3.Op) (*clientv3.TxnResponse, error) {
	resp, err := h.m.client.Txn(ctx).If(h.IsOwner()).Then(ops...).Commit()
	if err != nil {
		return nil, fmt.Errorf("lock: owner txn on %q: %w", h.m.name, err)
	}
	if !resp.Succeeded {
		return resp, fmt.Errorf("%w: key %s with token %d is gone", ErrNotOwner, h.key, h.rev)
	}
	return resp, nil
}
