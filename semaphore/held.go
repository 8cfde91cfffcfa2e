package semaphore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// Held is a slot that was acquired. It is held until Release or until it is
// lost; Lost and Context tell which moment that is.
type Held struct {
	s     *Semaphore
	sess  *session.Session
	slot  int
	key   string
	rev   int64
	lease clientv3.LeaseID

	ctx       context.Context
	cancel    context.CancelCauseFunc
	lost      chan struct{}
	stopWatch context.CancelFunc
	watchDone chan struct{}
	stopSess  func() bool

	mu       sync.Mutex
	err      error
	lossErr  error
	released bool
	semFreed bool
	lostOnce sync.Once
	relMu    sync.Mutex
}

func (a *attempt) held(slot int, key string, rev int64) *Held {
	ctx, cancel := context.WithCancelCause(context.Background())
	wctx, stop := context.WithCancel(a.sess.Context())
	h := &Held{
		s: a.s, sess: a.sess, slot: slot, key: key, rev: rev, lease: a.sess.Lease(),
		ctx: ctx, cancel: cancel, lost: make(chan struct{}),
		stopWatch: stop, watchDone: make(chan struct{}),
	}
	h.stopSess = context.AfterFunc(a.sess.Context(), func() { h.lose(a.sess.Err()) })
	go h.watchKey(wctx)
	return h
}

// watchKey ends the hold when the slot key is deleted or replaced. The
// watch starts from "now" (etcd's synced group, no catch-up delay); if it
// started after the grant, the key is read once to cover the gap.
func (h *Held) watchKey(ctx context.Context) {
	defer close(h.watchDone)
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(ctx)
		for wr := range h.s.client.Watch(wctx, h.key, clientv3.WithCreatedNotify(), clientv3.WithFilterPut()) {
			if wr.Err() != nil {
				break
			}
			if wr.Created {
				if wr.Header.Revision > h.rev && !h.stillOurs(ctx) {
					h.lose(fmt.Errorf("%w: %s", ErrKeyGone, h.key))
				}
				continue
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE && ev.Kv != nil && ev.Kv.ModRevision > h.rev {
					h.lose(fmt.Errorf("%w: %s", ErrKeyGone, h.key))
				}
			}
		}
		cancel()
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

func (h *Held) stillOurs(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := h.s.client.Get(rctx, h.key)
	if err != nil {
		return true // proves nothing; the session's deadline covers it
	}
	return len(resp.Kvs) > 0 && resp.Kvs[0].CreateRevision == h.rev
}

// Token returns the fencing token: the create revision of the slot key.
// Tokens grow from holder to holder of one slot; fence per Scope.
func (h *Held) Token() fencing.Token { return fencing.Token(h.rev) }

// Slot returns the slot number, in [0, limit).
func (h *Held) Slot() int { return h.slot }

// Scope returns the fencing scope of the slot, "NAME#slot": give it to the
// protected resource with the token.
func (h *Held) Scope() string { return Scope(h.s.name, h.slot) }

// Key returns the slot key in etcd.
func (h *Held) Key() string { return h.key }

// Lease returns the lease the slot key is attached to.
func (h *Held) Lease() clientv3.LeaseID { return h.lease }

// Name returns the semaphore's name.
func (h *Held) Name() string { return h.s.name }

// Lost is closed when the slot is lost while held: the session's local
// deadline passed, the lease was revoked, or the slot key was deleted or
// replaced. It is not closed by Release.
func (h *Held) Lost() <-chan struct{} { return h.lost }

// Context is cancelled when the slot is lost (cause wraps ErrLost and the
// reason) or released (cause wraps ErrNotHeld).
func (h *Held) Context() context.Context { return h.ctx }

// Err returns nil while held; after a loss an error wrapping ErrLost and
// the reason; after Release an error wrapping ErrNotHeld.
func (h *Held) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Alive reports at this instant whether the slot can still be trusted.
func (h *Held) Alive() bool {
	if h.Err() != nil {
		return false
	}
	if !h.sess.Alive() {
		h.lose(h.sess.Err())
		return false
	}
	return true
}

// Release gives the slot back: it deletes the slot key only if it still has
// this hold's create revision, so a late or retried Release never deletes a
// later holder's slot. If the request fails, the slot counts as released
// locally and Release may be called again. On a lost slot it still removes
// the key if it is there and returns an error wrapping ErrNotHeld and
// ErrLost; after a successful Release it returns ErrNotHeld.
func (h *Held) Release(ctx context.Context) error {
	h.relMu.Lock()
	defer h.relMu.Unlock()
	h.mu.Lock()
	if h.released {
		h.mu.Unlock()
		return ErrNotHeld
	}
	lostErr := h.lossErr
	if h.err == nil {
		h.err = errReleased
	}
	h.mu.Unlock()
	h.cancel(errReleased)
	resp, err := h.s.client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(h.key), "=", h.rev)).
		Then(clientv3.OpDelete(h.key)).Commit()
	if err != nil {
		return fmt.Errorf("semaphore: release %s: %w", h.key, err)
	}
	h.stop()
	h.mu.Lock()
	h.released = true
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

// stop ends the key watch and the session hook.
func (h *Held) stop() {
	h.stopSess()
	h.stopWatch()
	<-h.watchDone
}

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
	h.stopWatch() // the goroutine ends by itself; do not wait here (we may be on it)
	h.freeSem()
}

func (h *Held) freeSem() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.semFreed {
		h.semFreed = true
		<-h.s.sem
	}
}
