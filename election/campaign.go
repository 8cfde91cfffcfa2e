package election

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// errKeyGone is the cause when our candidate or leader key was deleted or
// re-created behind our back.
var errKeyGone = errors.New("key deleted or replaced behind our back")

// Campaign puts value as a candidate and blocks until it is the leader, then
// returns the Leadership. Candidates are served in create-revision order,
// exactly as etcd's concurrency.Election serves them, so both campaign
// against each other on one name.
//
// It returns ErrSessionExpired if the session ended, or the candidate key
// disappeared, while waiting; ctx's error if ctx ended first (the candidate
// key is then deleted); ErrClosed after Close; otherwise etcd's error
// (the candidate key is removed as well).
func (e *Election) Campaign(ctx context.Context, value string) (*Leadership, error) {
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(e.closeCtx, func() { cancel(ErrClosed) })
	defer stop()
	if e.closeCtx.Err() != nil {
		return nil, ErrClosed
	}

	s, own := e.cfg.session, false
	if s == nil {
		opts := append([]session.Option{session.WithTTL(e.cfg.ttl)}, e.cfg.sessionOpts...)
		var err error
		if s, err = session.New(cctx, e.client, opts...); err != nil {
			return nil, e.campaignErr(ctx, cctx, fmt.Errorf("election: campaign %q: %w", e.name, err))
		}
		own = true
	} else if !s.Alive() {
		return nil, fmt.Errorf("%w: %w", ErrSessionExpired, s.Err())
	}

	c := &candidate{e: e, s: s, own: own, key: fmt.Sprintf("%s%x", e.keyPrefix, s.Lease())}
	l, err := c.run(cctx, value)
	if err != nil {
		c.abandon()
		return nil, e.campaignErr(ctx, cctx, err)
	}
	if !e.register(l) {
		rctx, rcancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer rcancel()
		_ = l.Resign(rctx)
		return nil, ErrClosed
	}
	return l, nil
}

// campaignErr picks the error to report once the campaign context may have
// ended: Close wins, then the caller's context, then err.
func (e *Election) campaignErr(ctx, cctx context.Context, err error) error {
	if errors.Is(context.Cause(cctx), ErrClosed) {
		return ErrClosed
	}
	if ctx.Err() != nil && !errors.Is(err, ErrSessionExpired) {
		return ctx.Err()
	}
	return err
}

// candidate is one campaign in progress.
type candidate struct {
	e     *Election
	s     *session.Session
	own   bool
	key   string
	token fencing.Token
	// own key's watch, started right after the put; it becomes the
	// leadership's loss watch.
	ownCancel context.CancelFunc
	ownWatch  clientv3.WatchChan
}

func (c *candidate) run(ctx context.Context, value string) (*Leadership, error) {
	cli := c.e.client
	// Create our key unless the (shared) session already has one.
	resp, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(c.key), "=", 0)).
		Then(clientv3.OpPut(c.key, value, clientv3.WithLease(c.s.Lease()))).
		Else(clientv3.OpGet(c.key)).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("election: campaign %q: %w", c.e.name, err)
	}
	c.token = fencing.Token(resp.Header.Revision)
	if !resp.Succeeded {
		kv := resp.Responses[0].GetResponseRange().Kvs[0]
		c.token = fencing.Token(kv.CreateRevision)
		if string(kv.Value) != value {
			put, err := cli.Txn(ctx).
				If(clientv3.Compare(clientv3.CreateRevision(c.key), "=", kv.CreateRevision)).
				Then(clientv3.OpPut(c.key, value, clientv3.WithLease(c.s.Lease()))).
				Commit()
			if err != nil {
				return nil, fmt.Errorf("election: campaign %q: %w", c.e.name, err)
			}
			if !put.Succeeded {
				return nil, fmt.Errorf("%w: %w", ErrSessionExpired, errKeyGone)
			}
			resp.Header = put.Header
		}
	}
	c.watchOwn(resp.Header.Revision + 1)

	for {
		// One consistent read: our immediate predecessor and our own key.
		check, err := cli.Txn(ctx).Then(
			clientv3.OpGet(c.e.keyPrefix, append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(int64(c.token)-1))...),
			clientv3.OpGet(c.key),
		).Commit()
		if err != nil {
			return nil, fmt.Errorf("election: campaign %q: %w", c.e.name, err)
		}
		ours := check.Responses[1].GetResponseRange().Kvs
		if len(ours) == 0 || ours[0].CreateRevision != int64(c.token) {
			return nil, fmt.Errorf("%w: %w", ErrSessionExpired, errKeyGone)
		}
		preds := check.Responses[0].GetResponseRange().Kvs
		if len(preds) == 0 {
			// Never a phantom win: the lease must still be trusted now.
			if !c.s.Alive() {
				return nil, fmt.Errorf("%w: %w", ErrSessionExpired, c.s.Err())
			}
			return c.lead(value), nil
		}
		// Watch the predecessor from the revision after the read that saw
		// it, so that the delete is heard at once (why: lock/mutex.go, attempt.wait).
		if err := c.waitDelete(ctx, string(preds[0].Key), check.Header.Revision+1); err != nil {
			return nil, err
		}
	}
}

// watchOwn (re)starts the watch on our own key from rev.
func (c *candidate) watchOwn(rev int64) {
	if c.ownCancel != nil {
		c.ownCancel()
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	c.ownCancel = cancel
	c.ownWatch = c.e.client.Watch(wctx, c.key, clientv3.WithRev(rev))
}

// waitDelete returns nil when key was deleted (or its watch broke: the
// caller re-reads), and an error when the campaign must end.
func (c *candidate) waitDelete(ctx context.Context, key string, rev int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pred := c.e.client.Watch(wctx, key, clientv3.WithRev(rev), clientv3.WithFilterPut())
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.s.Done():
			return fmt.Errorf("%w: %w", ErrSessionExpired, c.s.Err())
		case wr, ok := <-c.ownWatch:
			if !ok || wr.Err() != nil {
				// Re-read, then watch our key again from after that read.
				if ctx.Err() != nil {
					return ctx.Err()
				}
				resp, err := c.e.client.Get(ctx, c.key)
				if err != nil {
					return fmt.Errorf("election: campaign %q: %w", c.e.name, err)
				}
				if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != int64(c.token) {
					return fmt.Errorf("%w: %w", ErrSessionExpired, errKeyGone)
				}
				c.watchOwn(resp.Header.Revision + 1)
				continue
			}
			if keyGone(wr.Events, c.token) {
				return fmt.Errorf("%w: %w", ErrSessionExpired, errKeyGone)
			}
		case wr, ok := <-pred:
			if !ok || wr.Err() != nil {
				return nil
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					return nil
				}
			}
		}
	}
}

// keyGone reports whether events on a key delete it or re-create it with
// another create revision than token.
func keyGone(evs []*clientv3.Event, token fencing.Token) bool {
	for _, ev := range evs {
		if ev.Type == mvccpb.DELETE || ev.Kv.CreateRevision != int64(token) {
			return true
		}
	}
	return false
}

// abandon undoes a failed campaign: delete our key if it is still the one
// we created, stop the watch, and revoke our own session.
func (c *candidate) abandon() {
	if c.ownCancel != nil {
		c.ownCancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if c.token != 0 {
		_, _ = c.e.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(c.key), "=", int64(c.token))).
			Then(clientv3.OpDelete(c.key)).
			Commit()
	}
	if c.own {
		_ = c.s.Close()
	}
}

// lead turns the won campaign into a Leadership and starts watching for loss.
func (c *candidate) lead(value string) *Leadership {
	lctx, cancel := context.WithCancelCause(context.Background())
	l := &Leadership{
		e:      c.e,
		s:      c.s,
		own:    c.own,
		key:    c.key,
		token:  c.token,
		value:  value,
		ctx:    lctx,
		cancel: cancel,
		done:   make(chan struct{}),
	}
	go l.monitor(c.ownWatch, c.ownCancel)
	c.ownCancel = nil // the monitor owns the watch now
	return l
}
