package election

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// This file drives coordinated election (policy.go decides): the options,
// Candidates, ResignTo, the leader's policy watch (Yield) and the
// candidate's re-queue. The protocol is in the package doc.

// WithPolicy sets the policy that chooses the preferred leader (default
// PolicyFirstCome). Every candidate of one election should use the same.
func WithPolicy(p Policy) Option { return func(c *config) { c.pref.Policy = p } }

// WithNoPreempt keeps a leader leading when a candidate its policy prefers
// joins: the preferred one leads after the leader resigns (ResignTo Best
// hands over to it) or fails.
func WithNoPreempt() Option { return func(c *config) { c.pref.NoPreempt = true } }

// WithAttributes publishes a for every campaign (its ID defaults to the
// campaign's value), so that the policy, ResignTo and Candidates see it.
func WithAttributes(a Attributes) Option {
	return func(c *config) {
		a.Labels = cloneLabels(a.Labels)
		c.attrs = &a
	}
}

// WithCoordination is WithPolicy, WithNoPreempt (if p says so) and
// WithAttributes in one option: a candidate's place in a coordinated
// election.
func WithCoordination(p Preference, a Attributes) Option {
	return func(c *config) {
		WithPolicy(p.Policy)(c)
		if p.NoPreempt {
			WithNoPreempt()(c)
		}
		WithAttributes(a)(c)
	}
}

func cloneLabels(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// coordinated: the candidates publish attributes (a policy or attributes
// were given). Otherwise the Election writes etcd's layout only.
func (c config) coordinated() bool {
	return c.attrs != nil || c.pref.Policy.orDefault() != PolicyFirstCome
}

func (c config) validateCoordination(name string) error {
	if _, err := ParsePolicy(string(c.pref.Policy)); err != nil {
		return err
	}
	if !c.coordinated() {
		return nil
	}
	if c.attrs != nil && c.attrs.Version != "" && !ValidVersion(c.attrs.Version) {
		return fmt.Errorf("%w: %q (want MAJOR.MINOR.PATCH, as 1.4.0 or v2.0.0-rc.1)", ErrBadVersion, c.attrs.Version)
	}
	return nil
}

// Policy returns the election's policy.
func (e *Election) Policy() Preference {
	p := e.cfg.pref
	p.Policy = p.Policy.orDefault()
	return p
}

// attrValue is the attribute record a campaign for value publishes.
func (e *Election) attrValue(value string) string {
	var a Attributes
	if e.cfg.attrs != nil {
		a = *e.cfg.attrs
	}
	if a.ID == "" {
		a.ID = value
	}
	return encodeAttrs(a, e.cfg.pref)
}

func (e *Election) handoverKey() string { return sidePrefix(e.keyPrefix) + handoverKey }

// readView reads the queue, the attributes and the handover record in one
// transaction, and returns them with the revision of the read.
func (e *Election) readView(ctx context.Context) (view, int64, error) {
	side := sidePrefix(e.keyPrefix)
	resp, err := e.client.Txn(ctx).Then(
		clientv3.OpGet(e.keyPrefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend)),
		clientv3.OpGet(side+attrInfix, clientv3.WithPrefix()),
		clientv3.OpGet(e.handoverKey()),
	).Commit()
	if err != nil {
		return view{}, 0, fmt.Errorf("election: read candidates of %q: %w", e.name, err)
	}
	var h *mvccpb.KeyValue
	if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) > 0 {
		h = kvs[0]
	}
	cands, err := candidatesOf(e.name, e.keyPrefix, resp.Responses[0].GetResponseRange().Kvs)
	if err != nil {
		return view{}, 0, err
	}
	v := buildView(e.keyPrefix, cands, resp.Responses[1].GetResponseRange().Kvs, h)
	return v, resp.Header.Revision, nil
}

// Candidates returns the queue in create-revision order, the leader first,
// each with its attributes (nil for a foreign candidate such as `etcdctl
// elect`). It reads all keys under the election's prefix in one request;
// only keys NAME/<lease hex> are candidates. An error wrapping session.ErrNameInUse
// (session.ErrNameInUse) when the name is a semaphore's or a read-write
// lock's.
func (e *Election) Candidates(ctx context.Context) ([]Candidate, error) {
	v, _, err := e.readView(ctx)
	return v.Queue, err
}

// Yield is closed when, under a preemptive policy, another candidate should
// lead: the holder stops acting and calls ResignTo(ctx, Best). It is never
// closed under PolicyFirstCome or WithNoPreempt, and stays open after the
// leadership ends. Run and the sidecar do this for their callers.
func (l *Leadership) Yield() <-chan struct{} { return l.yield }

// watchPolicy closes yield once the policy prefers another candidate. It
// ends with the leadership.
func (l *Leadership) watchPolicy() {
	ctx := l.Context()
	pref := l.e.cfg.pref
	for ctx.Err() == nil {
		v, rev, err := l.e.readView(ctx)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond): // etcd failing: read again
			}
			continue
		}
		switch pref.next(v, l.Token()).action {
		case actYield:
			close(l.yield)
			return
		case actGone:
			return // the monitor reports the loss
		}
		if err := l.e.waitChange(ctx, rev+1, sidePrefix(l.e.keyPrefix)+attrInfix); err != nil {
			return
		}
	}
}

// waitChange returns nil after any change under the election's prefix (and
// under each of also) after the read at revision rev-1, or when a watch
// broke; ctx's error when ctx ends. It watches from "now", not from rev: a
// watch from a past revision joins etcd's unsynced watchers, served only
// every 100ms (why: lock/mutex.go, attempt.wait); if writes came between
// the read and the watch's creation it returns at once, for a new read.
func (e *Election) waitChange(ctx context.Context, rev int64, also ...string) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	var chans []clientv3.WatchChan
	for _, p := range append([]string{e.keyPrefix}, also...) {
		ch := e.client.Watch(wctx, p, clientv3.WithPrefix(), clientv3.WithCreatedNotify())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case wr, ok := <-ch:
			if !ok || wr.Err() != nil || wr.Header.Revision >= rev || len(wr.Events) > 0 {
				return nil // broke, or something changed since the read
			}
		}
		chans = append(chans, ch)
	}
	var second clientv3.WatchChan
	if len(chans) > 1 {
		second = chans[1]
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-chans[0]:
	case <-second:
	}
	return nil
}

// ResignTo hands the leadership to the candidate with this ID, or with Best
// to the one the policy prefers among the others: the candidates queued
// between us and the target re-queue, then we resign, so the target becomes
// the lowest key and leads with a higher token, and no other candidate
// leads in between (see the package doc). We keep leading until the last
// step, which ends the Leadership (Lost closes) before our key is deleted.
//
// Errors, with the leadership kept: ErrNoCandidate (no such candidate of
// ours, or it left before the last step), ErrHandoverBlocked (a foreign candidate is queued before the
// target), ctx's error (the candidates before the target did not move in
// time: one crashed and its lease has not expired yet, say), etcd's error.
// ErrNotLeader if we no longer lead. ErrTargetGone, with the leadership
// given up: the target left at the last moment and the next in line leads.
func (l *Leadership) ResignTo(ctx context.Context, id string) error {
	return l.ResignToWith(ctx, id, nil)
}

// ResignToWith is ResignTo with a hook: stop runs once every candidate
// queued before the target has stepped aside, right before the leadership
// ends and our key is deleted; it does not run when ResignTo fails with the
// leadership kept. The sidecar stops its command there, so that the
// command runs while the candidates before the target move, and is gone
// before the target leads.
func (l *Leadership) ResignToWith(ctx context.Context, id string, stop func()) error {
	if !l.Alive() {
		return ErrNotLeader
	}
	e := l.e
	var recorded *handover
	defer func() {
		if recorded != nil && l.Context().Err() == nil {
			// Gave up waiting: withdraw the request.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			_, _ = e.client.Txn(cctx).If(l.IsOwner()).Then(clientv3.OpDelete(e.handoverKey())).Commit()
			cancel()
		}
	}()
	for {
		v, rev, err := e.readView(ctx)
		if err != nil {
			return err
		}
		if i := v.index(l.Token()); i != 0 {
			return ErrNotLeader // the key's watcher reports why
		}
		target, err := e.cfg.pref.target(v, l.Token(), id)
		if err != nil {
			return err
		}
		between, foreign := v.blockers(l.Token(), target.Token)
		if foreign != nil {
			return fmt.Errorf("%w: %s (value %q) is queued before %s", ErrHandoverBlocked, foreign.Key, foreign.Value, target.ID())
		}
		if len(between) == 0 {
			err := l.handOver(ctx, target, stop)
			if err == nil || l.Context().Err() != nil {
				recorded = nil // gone with the leadership
			}
			return err
		}
		h := handover{From: l.Key(), FromToken: l.Token(), To: target.Key, ToToken: target.Token}
		if recorded == nil || *recorded != h {
			b, _ := json.Marshal(h)
			resp, err := e.client.Txn(ctx).If(l.IsOwner()).
				Then(clientv3.OpPut(e.handoverKey(), string(b), clientv3.WithLease(l.Lease()))).Commit()
			if err != nil {
				return fmt.Errorf("election: resign %q to %s: %w", e.name, target.ID(), err)
			}
			if !resp.Succeeded {
				return ErrNotLeader
			}
			recorded = &h
			rev = resp.Header.Revision
		}
		wctx, cancel := context.WithCancel(ctx)
		unhook := context.AfterFunc(l.Context(), cancel)
		err = e.waitChange(wctx, rev+1)
		unhook()
		cancel()
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("election: resign %q to %s: %d candidate(s) before it did not step aside: %w", e.name, target.ID(), len(between), ctx.Err())
		case l.Context().Err() != nil:
			return ErrNotLeader
		case err != nil:
			return err
		}
	}
}

// handOver resigns in favour of target, every key before it but ours gone:
// it checks that the target is still queued (ErrNoCandidate, leadership
// kept, if not), runs stop, withdraws the handover record and resigns. If
// the target left in that last instant, the next in line leads and it
// returns ErrTargetGone.
func (l *Leadership) handOver(ctx context.Context, target Candidate, stop func()) error {
	resp, err := l.e.client.Get(ctx, target.Key)
	if err != nil {
		return fmt.Errorf("election: resign %q to %s: %w", l.e.name, target.ID(), err)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != int64(target.Token) {
		return fmt.Errorf("%w: %s (token %d) left the queue", ErrNoCandidate, target.ID(), target.Token)
	}
	if stop != nil {
		stop()
	}
	// The record goes first: a crash between the two leaves no request.
	if _, err := l.HeldKey.Txn(ctx, clientv3.OpDelete(l.e.handoverKey())); err != nil && !errors.Is(err, session.ErrNotOwner) {
		return errors.Join(fmt.Errorf("election: resign %q to %s: %w", l.e.name, target.ID(), err), l.Resign(ctx))
	}
	if err := l.Resign(ctx); err != nil {
		return err
	}
	if resp, err := l.e.client.Get(ctx, l.e.keyPrefix, queueKeysRead...); err == nil {
		if first, err := l.e.firstCandidate(resp.Kvs); err == nil && (first == nil || first.CreateRevision != int64(target.Token)) {
			return fmt.Errorf("%w: %s (token %d); resigned, the next in line leads", ErrTargetGone, target.ID(), target.Token)
		}
	}
	return nil
}

// requeue moves a waiting candidate to the back of the line: it deletes its
// key, provided the leader that asked still holds (so that we never delete
// a key that has meanwhile become the lowest), and creates it again. The
// held key is dropped first (our own delete is no loss) and held again at
// its new revision, or at the old one if nothing moved.
func (c *candidate) requeue(ctx context.Context, value string, h handover) (moved bool, err error) {
	c.k.Drop()
	c.k = nil
	del, err := c.e.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(c.key), "=", int64(c.token)),
			clientv3.Compare(clientv3.CreateRevision(h.From), "=", int64(h.FromToken))).
		Then(clientv3.OpDelete(c.key)).
		Commit()
	if err != nil || !del.Succeeded {
		// Not moved (the leader went meanwhile), or perhaps: hold the key
		// again; its watcher tells if it is gone after all.
		c.hold()
		if err != nil {
			return false, fmt.Errorf("election: campaign %q: requeue: %w", c.e.name, err)
		}
		return false, nil
	}
	put, err := c.e.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(c.key), "=", 0)).
		Then(clientv3.OpPut(c.key, value, clientv3.WithLease(c.s.Lease()))).
		Commit()
	if err != nil {
		return false, fmt.Errorf("election: campaign %q: requeue: %w", c.e.name, err)
	}
	if !put.Succeeded {
		return false, fmt.Errorf("%w: %w", session.ErrGoneWhileWaiting, errKeyGone)
	}
	c.token = fencing.Token(put.Header.Revision)
	c.hold()
	return true, nil
}

// attrOps are the writes that publish a candidate's attributes with its
// key (none in a first-come election without attributes).
func (c *candidate) attrOps(value string) []clientv3.Op {
	if !c.e.cfg.coordinated() {
		return nil
	}
	return []clientv3.Op{clientv3.OpPut(attrKey(c.e.keyPrefix, c.key), c.e.attrValue(value), clientv3.WithLease(c.s.Lease()))}
}

// handoverOps are the reads a waiting candidate adds to its check: the
// leader's key and the handover record.
func (c *candidate) handoverOps() []clientv3.Op {
	if !c.e.cfg.coordinated() {
		return nil
	}
	return []clientv3.Op{clientv3.OpGet(c.e.keyPrefix, clientv3.WithFirstCreate()...), clientv3.OpGet(c.e.handoverKey())}
}

// stepAside re-queues when the check (with handoverOps) shows a handover
// that passes over us. moved reports that it did: the caller reads again.
func (c *candidate) stepAside(ctx context.Context, value string, check *clientv3.TxnResponse) (moved bool, err error) {
	if len(check.Responses) < 4 {
		return false, nil
	}
	hkv := check.Responses[3].GetResponseRange().Kvs
	lead := first(check.Responses[2].GetResponseRange().Kvs)
	if lead == nil || len(hkv) == 0 {
		return false, nil
	}
	if !isCandidate(c.e.keyPrefix, string(lead.Key)) {
		var err error
		if lead, _, err = c.e.leaderKV(ctx); err != nil || lead == nil {
			return false, err
		}
	}
	var h handover
	if json.Unmarshal(hkv[0].Value, &h) != nil {
		return false, nil
	}
	v := view{Queue: []Candidate{{Key: string(lead.Key), Token: fencing.Token(lead.CreateRevision)}, {Key: c.key, Token: c.token}}, handover: &h}
	if c.e.cfg.pref.next(v, c.token).action != actRequeue {
		return false, nil
	}
	return c.requeue(ctx, value, h)
}

// watchHandover watches the handover record from now (created notify on:
// see waitDelete); nil (never) in a first-come election.
func (c *candidate) watchHandover(ctx context.Context) clientv3.WatchChan {
	if !c.e.cfg.coordinated() {
		return nil
	}
	return c.e.client.Watch(ctx, c.e.handoverKey(), clientv3.WithFilterDelete(), clientv3.WithCreatedNotify())
}

// handoverSince reports whether the handover record was written at or after
// rev, once its watch was created at revision created (nothing to read if
// no write came between).
func (c *candidate) handoverSince(ctx context.Context, created, rev int64) (bool, error) {
	if created < rev {
		return false, nil
	}
	resp, err := c.e.client.Get(ctx, c.e.handoverKey())
	if err != nil {
		return false, fmt.Errorf("election: campaign %q: %w", c.e.name, err)
	}
	return len(resp.Kvs) > 0 && resp.Kvs[0].ModRevision >= rev, nil
}

// yieldLeadership hands over to the best other candidate once the holder
// has stopped (StepDown).
func yieldLeadership(ctx context.Context, l *Leadership) {
	rctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	_, _, _ = l.StepDown(rctx)
}

// StepDown ends the leadership of a holder that has stopped acting. When
// Yield is closed (a preferred candidate should lead) it hands over to the
// candidate the policy prefers (ResignTo(ctx, Best)) and, if that cannot be
// made, resigns plainly, since the holder has stopped already: yielded is
// true and handoverErr says why the handover failed (nil: it was made).
// Otherwise it resigns. A leadership already lost is no error; err is
// Resign's other errors.
func (l *Leadership) StepDown(ctx context.Context) (yielded bool, handoverErr, err error) {
	select {
	case <-l.Yield():
		yielded = true
		if handoverErr = l.ResignTo(ctx, Best); handoverErr == nil || l.Context().Err() != nil {
			return yielded, handoverErr, nil
		}
	default:
	}
	if err := l.Resign(ctx); err != nil && !errors.Is(err, ErrNotLeader) {
		return yielded, handoverErr, err
	}
	return yielded, handoverErr, nil
}

// Candidates returns the election's queue as Election.Candidates does.
func (l *Leadership) Candidates(ctx context.Context) ([]Candidate, error) { return l.e.Candidates(ctx) }
