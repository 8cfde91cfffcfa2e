package election

import (
	"context"
	"errors"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/session"
)

// Leadership is a won campaign: a session.HeldKey, the leader key
// (embedded: its Token, Key, Lease, Lost, Context, Err, Alive and IsOwner
// are the leadership's), plus the election's name, the value proclaimed
// and Resign. It ends on loss (the session's local deadline passed, its
// lease was revoked, or the leader key was deleted or replaced behind our
// back) or on Resign; see package session for what Lost, Context and Err
// mean, the same for every held key: Lost closes on a loss only, Context
// ends either way (its cause wraps ErrResigned after Resign).
type Leadership struct {
	*session.HeldKey
	e   *Election
	own bool // the session is the campaign's own: Resign closes it

	stopOnEnd func() bool
	yield     chan struct{} // closed when the policy prefers another candidate

	mu       sync.Mutex
	value    string
	resigned bool // a Resign went through (or closed our own session)
	orphaned bool
}

// newLeadership wraps the won key. When it ends the Election forgets it;
// when it is lost while our own session lives, the session holds nothing
// and is closed.
func newLeadership(e *Election, k *session.HeldKey, own bool, value string) *Leadership {
	l := &Leadership{HeldKey: k, e: e, own: own, value: value, yield: make(chan struct{})}
	l.stopOnEnd = context.AfterFunc(k.Context(), func() {
		e.unregister(l)
		l.mu.Lock()
		orphaned := l.orphaned
		l.mu.Unlock()
		select {
		case <-k.Lost():
			if own && !orphaned && k.Session().Err() == nil {
				_ = k.Session().Close()
			}
		default:
		}
	})
	if e.cfg.coordinated() && e.cfg.pref.preempts() {
		go l.watchPolicy()
	}
	return l
}

// Value returns the value last proclaimed.
func (l *Leadership) Value() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.value
}

// Name returns the election's name.
func (l *Leadership) Name() string { return l.e.name }

// Scope returns the fencing scope of the token: the election's key prefix
// in etcd, PREFIX+NAME+"/", the same for every spelling of prefix and name
// that reaches its keys (and a lock's of the same name, which shares its
// layout and excludes it). Give it to the protected resource with Token.
func (l *Leadership) Scope() string { return l.e.cfg.Scope() }

// Release is Resign: a leadership's release closes its own session too.
func (l *Leadership) Release(ctx context.Context) error { return l.Resign(ctx) }

// Resign gives up the leadership: Context ends first (so the holder stops
// acting), then the leader key is deleted if it is still ours (a stale
// Resign never deletes a newer leader's key) and, unless the session came
// from WithSession, the session is closed (see session.Session.Close for
// when that revokes the lease). It returns ErrNotLeader when the key was no
// longer ours, and etcd's error if the delete failed; a Resign that failed
// can be called again and retries the delete, and one that succeeded
// returns nil when called again.
func (l *Leadership) Resign(ctx context.Context) error {
	l.mu.Lock()
	if l.resigned {
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	err := l.HeldKey.Release(ctx)
	if err != nil && !errors.Is(err, session.ErrNotHeld) && !l.own {
		// The key may still be there, on a session we must not revoke:
		// the caller can retry.
		return fmt.Errorf("election: resign %q: %w", l.e.name, err)
	}
	l.mu.Lock()
	l.resigned = true // deleted, not ours, or about to go with our lease
	l.mu.Unlock()
	var closeErr error
	if l.own {
		closeErr = l.HeldKey.Session().Close()
	}
	switch {
	case errors.Is(err, session.ErrNotHeld):
		return ErrNotLeader
	case err != nil:
		return fmt.Errorf("election: resign %q: %w", l.e.name, err)
	}
	return closeErr
}

// Proclaim replaces the leader's value without a new election, if the
// leader key is still ours; ErrNotLeader otherwise.
func (l *Leadership) Proclaim(ctx context.Context, value string) error {
	if !l.Alive() {
		return ErrNotLeader
	}
	_, err := l.HeldKey.Txn(ctx, clientv3.OpPut(l.HeldKey.Key(), value, clientv3.WithLease(l.HeldKey.Lease())))
	switch {
	case errors.Is(err, session.ErrNotOwner):
		return ErrNotLeader
	case err != nil:
		return fmt.Errorf("election: proclaim %q: %w", l.e.name, err)
	}
	l.mu.Lock()
	l.value = value
	l.mu.Unlock()
	return nil
}

// orphan ends the leadership without deleting the key: our own session
// stops keeping the lease alive, and the key goes when the lease expires.
func (l *Leadership) orphan() {
	l.mu.Lock()
	l.orphaned = true
	l.mu.Unlock()
	if l.own {
		l.HeldKey.Session().Orphan()
		return
	}
	l.HeldKey.Drop()
}

// Txn applies ops in one etcd transaction guarded by IsOwner (a
// comparison that holds exactly while this leadership lasts in etcd, as
// concurrency.Mutex.IsOwner: a leader paused past its lease cannot commit
// once its key is gone). It returns
// the response when the guard held and ops were applied; an error wrapping
// ErrNotLeader and ErrNotOwner (and the response) when the leader key was no
// longer ours and nothing was applied (the leadership then counts as lost);
// or the request's error, in which case the transaction may or may not
// have been applied.
func (l *Leadership) Txn(ctx context.Context, ops ...clientv3.Op) (*clientv3.TxnResponse, error) {
	resp, err := l.HeldKey.Txn(ctx, ops...)
	if errors.Is(err, session.ErrNotOwner) {
		return resp, fmt.Errorf("%w: %w", ErrNotLeader, err)
	}
	if err != nil {
		return nil, fmt.Errorf("election: owner txn on %q: %w", l.e.name, err)
	}
	return resp, nil
}
