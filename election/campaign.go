package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/session"
)

// errKeyGone is the cause when our candidate key was deleted or re-created
// behind our back while we campaigned.
var errKeyGone = session.ErrKeyGone

// Campaign puts value as a candidate and blocks until it is the leader, then
// returns the Leadership. Candidates are served in create-revision order,
// exactly as etcd's concurrency.Election serves them, so both campaign
// against each other on one name.
//
// It returns session.ErrGoneWhileWaiting if the session ended, or the candidate key
// disappeared, while waiting; ctx's error if ctx ended first (the candidate
// key is then deleted); session.ErrClosed after Close; otherwise etcd's error
// (the candidate key is removed as well).
func (e *Election) Campaign(ctx context.Context, value string) (*Leadership, error) {
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(e.closeCtx, func() { cancel(session.ErrClosed) })
	defer stop()
	if e.closeCtx.Err() != nil {
		return nil, session.ErrClosed
	}

	s, own := e.cfg.Session, false
	if s == nil {
		opts := e.cfg.OwnSessionOptions()
		var err error
		if s, err = session.New(cctx, e.client, opts...); err != nil {
			return nil, e.campaignErr(ctx, cctx, fmt.Errorf("election: campaign %q: %w", e.name, err))
		}
		own = true
	} else if !s.Alive() {
		return nil, fmt.Errorf("%w: %w", session.ErrGoneWhileWaiting, s.Err())
	}

	c := &candidate{e: e, s: s, own: own, key: fmt.Sprintf("%s%x", e.keyPrefix, s.Lease()), started: s.Clock().Now()}
	l, err := c.run(cctx, value)
	if err != nil {
		c.abandon()
		return nil, e.campaignErr(ctx, cctx, err)
	}
	if !e.register(l) {
		rctx, rcancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer rcancel()
		_ = l.Resign(rctx)
		return nil, session.ErrClosed
	}
	return l, nil
}

// campaignErr picks the error to report once the campaign context may have
// ended: Close wins, then the caller's context, then err.
func (e *Election) campaignErr(ctx, cctx context.Context, err error) error {
	if errors.Is(context.Cause(cctx), session.ErrClosed) {
		return session.ErrClosed
	}
	if ctx.Err() != nil && !errors.Is(err, session.ErrGoneWhileWaiting) {
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
	// started is when the campaign began (the session's clock; a campaign
	// on a session of its own begins once the lease is granted).
	started time.Time
	// k is our key, held from the put on: its loss ends the campaign, and
	// it becomes the leadership.
	k *session.HeldKey
}

func (c *candidate) run(ctx context.Context, value string) (*Leadership, error) {
	cli := c.e.client
	// Create our key unless the (shared) session already has one.
	resp, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(c.key), "=", 0)).
		Then(append([]clientv3.Op{clientv3.OpPut(c.key, value, clientv3.WithLease(c.s.Lease()))}, c.attrOps(value)...)...).
		Else(append([]clientv3.Op{clientv3.OpGet(c.key)}, c.attrOps(value)...)...).
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
				return nil, fmt.Errorf("%w: %w", session.ErrGoneWhileWaiting, errKeyGone)
			}
		}
	}
	c.hold()

	for {
		// One consistent read: our immediate predecessor (keys only: etcd
		// serves a sorted keys-only range from its index, why: lock/mutex.go,
		// blockerOps), our own key, and the handover record. A predecessor
		// that is not a candidate (another name's key) sends us to read
		// all keys before ours.
		check, err := cli.Txn(ctx).Then(append([]clientv3.Op{
			clientv3.OpGet(c.e.keyPrefix, append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(int64(c.token)-1), clientv3.WithKeysOnly())...),
			clientv3.OpGet(c.key),
		}, c.handoverOps()...)...).Commit()
		if err != nil {
			return nil, fmt.Errorf("election: campaign %q: %w", c.e.name, err)
		}
		ours := check.Responses[1].GetResponseRange().Kvs
		if len(ours) == 0 || ours[0].CreateRevision != int64(c.token) {
			return nil, fmt.Errorf("%w: %w", session.ErrGoneWhileWaiting, errKeyGone)
		}
		pred, rev := first(check.Responses[0].GetResponseRange().Kvs), check.Header.Revision
		if pred != nil && !isCandidate(c.e.keyPrefix, string(pred.Key)) {
			if pred, rev, err = c.predecessor(ctx); err != nil {
				return nil, err
			}
		}
		if pred == nil {
			// Never a phantom win: the lease must still be trusted now.
			if !c.k.Alive() {
				return nil, c.gone()
			}
			c.k.Granted(c.started)
			return newLeadership(c.e, c.k, c.own, value), nil
		}
		if moved, err := c.stepAside(ctx, value, check); err != nil {
			return nil, err
		} else if moved {
			continue
		}
		if err := c.waitDelete(ctx, pred, rev+1); err != nil {
			return nil, err
		}
	}
}

// predecessor is the candidate created last before ours (nil: none),
// from all keys before ours, and the revision of the read; a semaphore's or
// a read-write lock's key among them is an error wrapping session.ErrNameInUse.
func (c *candidate) predecessor(ctx context.Context) (*mvccpb.KeyValue, int64, error) {
	resp, err := c.e.client.Get(ctx, c.e.keyPrefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend),
		clientv3.WithMaxCreateRev(int64(c.token)-1), clientv3.WithKeysOnly())
	if err != nil {
		return nil, 0, fmt.Errorf("election: campaign %q: %w", c.e.name, err)
	}
	preds, err := candidatesOf(c.e.name, c.e.keyPrefix, resp.Kvs)
	return first(preds), resp.Header.Revision, err
}

// gone is the error of a campaign whose own key or session vanished.
func (c *candidate) gone() error {
	if err := c.s.Err(); err != nil {
		return fmt.Errorf("%w: %w", session.ErrGoneWhileWaiting, err)
	}
	return fmt.Errorf("%w: %w", session.ErrGoneWhileWaiting, errKeyGone)
}

// waitDelete returns nil when the predecessor's key was deleted (or its
// watch broke: the caller re-reads), and an error when the campaign must
// end. rev is the revision after the read that saw the predecessor.
//
// The watch starts from "now", not from rev: a watch from a revision that
// other writes have passed joins etcd's unsynced watchers, served only
// every 100ms (why: lock/mutex.go, attempt.wait), which a busy queue (a
// handover re-queueing candidates) hits every time. If the watch started
// after writes our read did not see, one more read of the key tells
// whether the delete was among them.
func (c *candidate) waitDelete(ctx context.Context, pred *mvccpb.KeyValue, rev int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	key := string(pred.Key)
	predWatch := c.e.client.Watch(wctx, key, clientv3.WithFilterPut(), clientv3.WithCreatedNotify())
	handover := c.watchHandover(wctx)
	stopExpiry := c.watchExpiry(wctx, pred)
	defer stopExpiry()
	for {
		select {
		case wr, ok := <-handover:
			if ok && wr.Err() == nil && wr.Created {
				if moved, err := c.handoverSince(ctx, wr.Header.Revision, rev); err != nil || moved {
					return err
				}
				continue
			}
			return nil // a handover began (or the watch broke): read again, perhaps to step aside
		case <-ctx.Done():
			return ctx.Err()
		case <-c.k.Lost():
			return c.gone()
		case wr, ok := <-predWatch:
			if !ok || wr.Err() != nil {
				return nil
			}
			if wr.Created && wr.Header.Revision >= rev {
				resp, err := c.e.client.Get(ctx, key)
				if err != nil {
					return fmt.Errorf("election: campaign %q: %w", c.e.name, err)
				}
				if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != pred.CreateRevision {
					return nil
				}
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					return nil
				}
			}
		}
	}
}

// watchExpiry revokes pred's lease once it has provably expired (a
// crashed leader or candidate: primitive.WatchExpiry), so that the wait
// ends at the lease's expiry rather than at etcd's next expiry check. A
// candidate that is not right behind the leader reads a renewed lease
// only once a second.
func (c *candidate) watchExpiry(ctx context.Context, pred *mvccpb.KeyValue) (stop func()) {
	head := func(ctx context.Context) bool {
		resp, err := c.e.client.Get(ctx, c.e.keyPrefix, append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(pred.CreateRevision-1), clientv3.WithKeysOnly())...)
		if err != nil {
			return false
		}
		older, err := candidatesOf(c.e.name, c.e.keyPrefix, resp.Kvs)
		return err == nil && len(older) == 0
	}
	target := primitive.ExpiryTarget{Key: string(pred.Key), Lease: primitive.LeaseOfKey(c.e.keyPrefix, string(pred.Key))}
	return primitive.WatchExpiry(ctx, c.e.client, c.s.Clock(), []primitive.ExpiryTarget{target},
		primitive.ExpiryConfig{Head: head, OnRevoke: primitive.TraceOf(ctx).Revoked})
}

// hold starts holding our key at c.token.
func (c *candidate) hold() {
	c.k = c.s.Hold(c.key, int64(c.token), session.HoldConfig{ReleaseCause: ErrResigned, Kind: "election", LossWatchDelay: primitive.LossWatchDelay})
}

// abandon undoes a failed campaign: delete our key if it is still the one
// we created, and revoke our own session.
func (c *candidate) abandon() {
	if c.k != nil {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		if err := c.k.Release(ctx); err != nil && !errors.Is(err, session.ErrNotHeld) {
			c.k.Drop()
		}
		cancel()
	}
	if c.own {
		_ = c.s.Close()
	}
}
