package election

import (
	"context"
	"errors"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// Leadership is a won campaign. It ends on loss (the session's local
// deadline passed, its lease was revoked, or the leader key was deleted or
// replaced behind our back) or on Resign; Lost and Context say when, Err why.
type Leadership struct {
	e     *Election
	s     *session.Session
	own   bool
	key   string
	token fencing.Token

	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the monitor has exited

	mu       sync.Mutex
	value    string
	resigned bool
	released bool // the key is deleted, not ours, or its lease revoked
	orphaned bool
}

// Token returns the fencing token: the create revision of the leader key.
// Successive leaders of one election have strictly increasing tokens.
func (l *Leadership) Token() fencing.Token { return l.token }

// Value returns the value last proclaimed.
func (l *Leadership) Value() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.value
}

// Key returns the leader key.
func (l *Leadership) Key() string { return l.key }

// Lease returns the lease the leader key lives on.
func (l *Leadership) Lease() clientv3.LeaseID { return l.s.Lease() }

// Name returns the election's name.
func (l *Leadership) Name() string { return l.e.name }

// Session returns the session the leadership lives on.
func (l *Leadership) Session() *session.Session { return l.s }

// Lost is closed when the leadership ends, by loss or by Resign.
func (l *Leadership) Lost() <-chan struct{} { return l.ctx.Done() }

// Context is cancelled when the leadership ends; its cause is Err.
func (l *Leadership) Context() context.Context { return l.ctx }

// Err returns nil while the leadership lasts, then why it ended: an error
// wrapping ErrLost (and the session's reason, session.ErrExpired,
// session.ErrRevoked or session.ErrClosed, when the session ended), or
// ErrResigned.
func (l *Leadership) Err() error {
	if l.ctx.Err() == nil {
		return nil
	}
	return context.Cause(l.ctx)
}

// Alive reports, at this instant, whether we are still the leader as far
// as we can know without asking etcd: not ended, and the session's local
// deadline not passed. Check it right before a protected action, and send
// the Token with it: a pause after the check is what fencing catches.
func (l *Leadership) Alive() bool {
	if l.ctx.Err() != nil {
		return false
	}
	if !l.s.Alive() {
		l.end(fmt.Errorf("%w: %w", ErrLost, l.s.Err()))
		return false
	}
	return true
}

// end records why the leadership ended; the first reason wins.
func (l *Leadership) end(cause error) {
	l.cancel(cause)
	l.e.unregister(l)
}

// Resign gives up the leadership: Lost closes first (so the holder stops
// acting), then the leader key is deleted if it is still ours (a stale
// Resign never deletes a newer leader's key) and, unless the session came
// from WithSession, the session is closed (its lease revoked). It returns
// ErrNotLeader when the key was no longer ours, and etcd's error if the
// delete failed; a Resign that failed can be called again and retries the
// delete, and one that succeeded returns nil when called again.
func (l *Leadership) Resign(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return nil
	}
	l.resigned = true
	l.mu.Unlock()

	l.end(ErrResigned)
	<-l.done
	resp, err := l.e.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(l.key), "=", int64(l.token))).
		Then(clientv3.OpDelete(l.key)).
		Commit()
	if err != nil && !l.own {
		// The key may still be there, on a session we must not revoke:
		// the caller can retry.
		return fmt.Errorf("election: resign %q: %w", l.e.name, err)
	}
	l.mu.Lock()
	l.released = true // deleted, not ours, or about to go with our lease
	l.mu.Unlock()
	var closeErr error
	if l.own {
		closeErr = l.s.Close()
	}
	switch {
	case err != nil:
		return fmt.Errorf("election: resign %q: %w", l.e.name, err)
	case !resp.Succeeded:
		return ErrNotLeader
	}
	return closeErr
}

// Proclaim replaces the leader's value without a new election, if the
// leader key is still ours; ErrNotLeader otherwise.
func (l *Leadership) Proclaim(ctx context.Context, value string) error {
	if !l.Alive() {
		return ErrNotLeader
	}
	resp, err := l.e.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(l.key), "=", int64(l.token))).
		Then(clientv3.OpPut(l.key, value, clientv3.WithLease(l.s.Lease()))).
		Commit()
	if err != nil {
		return fmt.Errorf("election: proclaim %q: %w", l.e.name, err)
	}
	if !resp.Succeeded {
		l.end(fmt.Errorf("%w: %w", ErrLost, errKeyGone))
		return ErrNotLeader
	}
	l.mu.Lock()
	l.value = value
	l.mu.Unlock()
	return nil
}

// orphan ends the leadership without deleting the key: the session stops
// keeping the lease alive, and the key goes when the lease expires.
func (l *Leadership) orphan() {
	l.mu.Lock()
	l.orphaned = true
	l.mu.Unlock()
	if l.own {
		l.s.Orphan()
	}
	l.end(fmt.Errorf("%w: %w", ErrLost, session.ErrClosed))
	<-l.done
}

// monitor ends the leadership when the session ends or our key changes.
// It owns the watch on our key, started when the key was written.
func (l *Leadership) monitor(wch clientv3.WatchChan, stopWatch context.CancelFunc) {
	defer close(l.done)
	defer func() {
		stopWatch()
		l.mu.Lock()
		release := l.own && !l.resigned && !l.orphaned && l.s.Err() == nil
		l.mu.Unlock()
		if release {
			// Our key is gone but our session lives: it holds nothing now.
			_ = l.s.Close()
		}
	}()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-l.s.Done():
			l.end(fmt.Errorf("%w: %w", ErrLost, l.s.Err()))
			return
		case wr, ok := <-wch:
			if ok && wr.Err() == nil {
				if keyGone(wr.Events, l.token) {
					l.end(fmt.Errorf("%w: %w", ErrLost, errKeyGone))
					return
				}
				continue
			}
			// The watch broke (compaction, member without a leader):
			// re-read the key and watch again from after the read.
			stopWatch()
			var err error
			if wch, stopWatch, err = l.rewatch(); err != nil {
				if !errors.Is(err, context.Canceled) {
					l.end(fmt.Errorf("%w: %w", ErrLost, err))
					return
				}
				// Ended meanwhile: the next turn reports why.
				wch, stopWatch = nil, func() {}
			}
		}
	}
}

func (l *Leadership) rewatch() (clientv3.WatchChan, context.CancelFunc, error) {
	// Give up reading when the leadership or the session ends.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop1 := context.AfterFunc(l.ctx, cancel)
	defer stop1()
	stop2 := context.AfterFunc(l.s.Context(), cancel)
	defer stop2()
	resp, err := l.e.client.Get(ctx, l.key)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, context.Canceled
		}
		return nil, nil, err
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != int64(l.token) {
		return nil, nil, errKeyGone
	}
	wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	return l.e.client.Watch(wctx, l.key, clientv3.WithRev(resp.Header.Revision+1)), wcancel, nil
}

// IsOwner returns a comparison that holds exactly while this leadership
// lasts in etcd: the leader key exists with this leadership's create
// revision (the token), as concurrency.Mutex.IsOwner. Guard your own etcd
// transaction with it so that its writes commit only while we lead:
//
//	resp, err := cli.Txn(ctx).If(l.IsOwner()).Then(clientv3.OpPut(k, v)).Commit()
//	if err == nil && !resp.Succeeded {
//		// nothing applied: no longer the leader
//	}
//
// Leadership.Txn does exactly this and turns Succeeded=false into an error
// matching ErrNotLeader. The comparison is evaluated by etcd, so a leader
// paused past its lease cannot commit once its key is gone.
func (l *Leadership) IsOwner() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(l.key), "=", int64(l.token))
}

// Txn applies ops in one etcd transaction guarded by IsOwner, through the
// Election's client. It returns the response when the guard held and ops
// were applied; an error wrapping ErrNotLeader (and the response) when the
// leader key was no longer ours and nothing was applied; or the request's
// error, in which case the transaction may or may not have been applied.
func (l *Leadership) Txn(ctx context.Context, ops ...clientv3.Op) (*clientv3.TxnResponse, error) {
	resp, err := l.e.client.Txn(ctx).If(l.IsOwner()).Then(ops...).Commit()
	if err != nil {
		return nil, fmt.Errorf("election: owner txn on %q: %w", l.e.name, err)
	}
	if !resp.Succeeded {
		return resp, fmt.Errorf("%w: key %s with token %d is gone", ErrNotLeader, l.key, l.token)
	}
	return resp, nil
}
