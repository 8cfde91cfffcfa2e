package lock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// keyWatch watches a Mutex's own key for as long as its session lives. The
// key of a name is the same for every acquisition on one lease
// (prefix/<lease hex>), so one long-lived watch serves every waiter and
// holder in turn: acquiring costs no watch set-up and clientv3's watch
// stream stays open between locks, which keeps the uncontended path close to
// concurrency.Mutex's (its only extra cost is the delete event of each
// Unlock).
//
// The watch starts from "now", in etcd's synced group (see attempt.wait in
// mutex.go). A subscriber read its key at revision seen; if the watch
// reports its creation at a revision after that, the key is read once more
// to cover the writes in between.
type keyWatch struct {
	client *clientv3.Client
	key    string
	cancel context.CancelFunc
	done   chan struct{}
	checks sync.WaitGroup // verifications started by attach

	mu         sync.Mutex
	created    int64 // revision the current watch reported at creation; 0 while none
	lastDelete int64 // revision of the last delete of the key the watch reported
	sub        *keySub
}

// keySub is one acquisition (waiting, then holding) listening for the loss
// of its key.
type keySub struct {
	rev  int64         // create revision of the key it owns
	seen int64         // revision at which it last read the key as its own
	gone chan struct{} // closed when the key is deleted or replaced

	mu     sync.Mutex
	isGone bool
	onGone func() // called once, on loss, if set
}

func newKeySub(rev, seen int64) *keySub {
	return &keySub{rev: rev, seen: seen, gone: make(chan struct{})}
}

func (s *keySub) markGone() {
	s.mu.Lock()
	if s.isGone {
		s.mu.Unlock()
		return
	}
	s.isGone = true
	close(s.gone)
	fn := s.onGone
	s.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// setOnGone registers fn to be called on loss; at once if it already happened.
func (s *keySub) setOnGone(fn func()) {
	s.mu.Lock()
	s.onGone = fn
	already := s.isGone
	s.mu.Unlock()
	if already {
		fn()
	}
}

// startKeyWatch watches key until ctx ends or stop is called.
func startKeyWatch(ctx context.Context, client *clientv3.Client, key string) *keyWatch {
	ctx, cancel := context.WithCancel(ctx)
	kw := &keyWatch{client: client, key: key, cancel: cancel, done: make(chan struct{})}
	go kw.run(ctx)
	return kw
}

func (kw *keyWatch) stop() {
	kw.cancel()
	<-kw.done
	kw.checks.Wait()
}

// attach makes sub the listener; it must have read its key as its own at
// sub.seen. If the watch may have started after that, the key is checked.
func (kw *keyWatch) attach(sub *keySub) {
	kw.mu.Lock()
	kw.sub = sub
	check := kw.created > sub.seen
	deleted := kw.lastDelete > sub.rev // reported before sub attached
	kw.mu.Unlock()
	if deleted {
		sub.markGone()
		return
	}
	if check {
		kw.checks.Go(func() { kw.verify(sub) })
	}
}

// detach removes sub if it is the listener.
func (kw *keyWatch) detach(sub *keySub) {
	kw.mu.Lock()
	if kw.sub == sub {
		kw.sub = nil
	}
	kw.mu.Unlock()
}

func (kw *keyWatch) run(ctx context.Context) {
	defer close(kw.done)
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(ctx)
		// Only deletes matter: a key is never recreated without being deleted
		// first, and leaving out puts halves the traffic of each lock cycle.
		for wr := range kw.client.Watch(wctx, kw.key, clientv3.WithCreatedNotify(), clientv3.WithFilterPut()) {
			if wr.Err() != nil {
				break
			}
			if wr.Created {
				kw.onCreated(wr.Header.Revision)
				backoff = 50 * time.Millisecond
				continue
			}
			for _, ev := range wr.Events {
				kw.deliver(ev)
			}
		}
		cancel()
		kw.mu.Lock()
		kw.created = 0
		kw.mu.Unlock()
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

func (kw *keyWatch) onCreated(rev int64) {
	kw.mu.Lock()
	kw.created = rev
	sub := kw.sub
	kw.mu.Unlock()
	if sub != nil && rev > sub.seen {
		kw.verify(sub)
	}
}

// deliver tells the listener if ev ends its ownership. Events of earlier
// acquisitions on the same key (at or before its create revision) are not
// its business.
func (kw *keyWatch) deliver(ev *mvccpb.Event) {
	kw.mu.Lock()
	if ev.Type == mvccpb.DELETE && ev.Kv != nil {
		kw.lastDelete = max(kw.lastDelete, ev.Kv.ModRevision)
	}
	sub := kw.sub
	kw.mu.Unlock()
	if sub != nil && ev.Kv != nil && ev.Kv.ModRevision > sub.rev && ownKeyGone(ev, sub.rev) {
		sub.markGone()
	}
}

// verify reads the key and marks sub gone if it is no longer its own. A
// failed read proves nothing; the session's deadline covers that case.
func (kw *keyWatch) verify(sub *keySub) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := kw.client.Get(ctx, kw.key)
	if err != nil {
		return
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != sub.rev {
		sub.markGone()
	}
}

// goneError is the reason a listener's key went away.
func goneError(key string) error { return fmt.Errorf("%w: %s", ErrKeyGone, key) }
