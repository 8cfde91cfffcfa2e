package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/session"
)

// cleanupTimeout bounds the requests that remove a waiting key after Lock
// gave up: they run after the caller's context is done.
const cleanupTimeout = 5 * time.Second

// Waiting describes a Lock that has to wait; see WithOnWait.
type Waiting struct {
	// Name is the lock's name; Key is the waiter's own key.
	Name, Key string
	// HolderKey and HolderToken identify the holder when the waiter looked.
	HolderKey   string
	HolderToken fencing.Token
}

// config is a Mutex's configuration: what every primitive has
// (primitive.Config, whose Validate holds the rules) and the wait notice.
type config struct {
	primitive.Config
	onWait func(Waiting)
}

// Option configures a Mutex (and an RWMutex).
type Option func(*config)

// WithTTL sets the TTL of the lease of the Mutex's own sessions (default
// session.DefaultTTL; bounds: session.CheckTTL). Not with WithSession.
func WithTTL(d time.Duration) Option { return func(c *config) { c.TTL = d } }

// WithSession makes the Mutex hold its keys on s instead of on sessions of
// its own, so that many locks share one lease. The caller closes s;
// Mutex.Close does not. Two Mutexes of one session on the same name are
// the same lock (as with concurrency.Mutex): do not hold both.
func WithSession(s *session.Session) Option { return func(c *config) { c.Session = s } }

// WithSessionOptions passes options to the Mutex's own sessions (an
// observer for metrics, a margin, a keepalive interval, a clock). Not with
// WithSession.
func WithSessionOptions(opts ...session.Option) Option {
	return func(c *config) { c.SessionOptions = append(c.SessionOptions, opts...) }
}

// WithPrefix puts the lock's keys under p+name+"/" instead of name+"/". p is
// used as given: the way to reach keys etcd's concurrency.NewMutex(s, P)
// keeps under P+"/" when P starts with "/" (name "jobs" with prefix "/" is
// P "/jobs"); see docs/migrating.md.
func WithPrefix(p string) Option { return func(c *config) { c.Prefix = p } }

// WithLockDelay makes a waiter that saw a holder ahead of it lost (its key
// deleted and its lease gone: expired or revoked) wait d after that deletion
// before it takes the lock. A clean release (Unlock: key deleted, lease
// alive) costs no delay. Default 0: off. See the package doc for what it
// covers and what it does not.
func WithLockDelay(d time.Duration) Option { return func(c *config) { c.LockDelay = d } }

// WithOnWait is called once per Lock call that has to wait, with the holder
// at that moment, before it starts waiting. It must not block.
func WithOnWait(fn func(Waiting)) Option { return func(c *config) { c.onWait = fn } }

// Mutex is a fenced, FIFO mutual exclusion lock on etcd. A Mutex is held at
// most once at a time: Lock on a Mutex that is held or being acquired waits
// for it to be released (as sync.Mutex does). Safe for concurrent use.
type Mutex struct {
	client *clientv3.Client
	name   string
	pfx    string // prefix+name+"/"
	kind   keyKind
	cfg    config
	sess   *primitive.Lazy // also serializes acquisitions: see primitive.Serially

	// What every acquisition sends that depends only on the Mutex (built
	// once: an uncontended Lock is mostly its two requests).
	nameEmpty clientv3.Cmp  // no key lives under the name
	firsts    []clientv3.Op // the first-created reads and the N/limit read
}

// New returns a Mutex named name on client. It does no I/O: the Mutex's
// own session (unless WithSession) is created by the first Lock or TryLock,
// and again after it was lost. It refuses a name that cannot be what its
// user meant (an error wrapping session.ErrInvalidName that names the rule:
// empty, a leading, trailing or double "/", white space, a control
// character, a last segment another name's keys use) and a TTL out of
// bounds (session.ErrBadTTL).
func New(client *clientv3.Client, name string, opts ...Option) (*Mutex, error) {
	return newMutex(client, name, kindMutex, opts...)
}

func newMutex(client *clientv3.Client, name string, kind keyKind, opts ...Option) (*Mutex, error) {
	cfg := config{Config: primitive.Config{Kind: primitive.KindLock, Name: name}}
	for _, o := range opts {
		o(&cfg)
	}
	if client == nil {
		return nil, errors.New("lock: nil client")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	m := &Mutex{
		client: client,
		name:   name,
		pfx:    cfg.KeyPrefix(),
		kind:   kind,
		cfg:    cfg,
		sess:   primitive.NewLazy(client, cfg.Session, cfg.OwnSessionOptions()...),
	}
	m.nameEmpty = clientv3.Compare(clientv3.CreateRevision(m.pfx), "=", 0).WithPrefix()
	// With a lock delay, read every key ahead of us, to tell later which of
	// them went by a loss.
	m.firsts = append(m.blockerOps(0, cfg.LockDelay == 0), clientv3.OpGet(m.pfx+primitive.SemLimitSuffix, clientv3.WithKeysOnly()))
	return m, nil
}

// Name returns the lock's name (without the prefix).
func (m *Mutex) Name() string { return m.name }

// Close ends the Mutex. If it created its session, Close revokes the lease,
// which releases a lock still held (its Held reports the loss, with reason
// session.ErrClosed). Lock and TryLock then return session.ErrClosed.
func (m *Mutex) Close() error { return m.sess.Close() }

// Lock blocks until the lock is held, then returns it with its fencing
// token. Waiters are served in the order they asked (FIFO). If ctx ends
// first, Lock removes its waiting key and returns ctx's error. It returns
// session.ErrGoneWhileWaiting if its own key or session vanished while it
// waited, session.ErrClosed after (or during, if the Mutex owns its
// session) Close, an error wrapping session.ErrNameInUse if the name is a semaphore's,
// and etcd's error if a request failed.
func (m *Mutex) Lock(ctx context.Context) (*Held, error) {
	return primitive.Serially(ctx, m.sess, false, nil, m.acquire)
}

// TryLock takes the lock if it is free and returns a *LockedError (matching
// ErrLocked) at once if it is held elsewhere, including by this Mutex.
func (m *Mutex) TryLock(ctx context.Context) (*Held, error) {
	return primitive.Serially(ctx, m.sess, true, &LockedError{Name: m.name}, m.acquire)
}

// keyOf is the key of the Mutex's holder on s.
func (m *Mutex) keyOf(s *session.Session) string {
	return fmt.Sprintf("%s%s%x", m.pfx, m.kind.infix(), int64(s.Lease()))
}

// attempt is one acquisition in progress.
type attempt struct {
	m       *Mutex
	s       *session.Session
	k       *session.HeldKey // our key, held from the put on: its loss ends the wait too
	gate    *grantGate
	key     string
	nonce   string
	rev     int64 // create revision of our key
	created bool  // we put the key (rather than finding it from an earlier call)
	started time.Time
}

func (m *Mutex) acquire(ctx context.Context, try bool) (*Held, error) {
	h, err := m.acquireOnce(ctx, try)
	if errors.Is(err, errLeaseGone) && m.sess.Owned() {
		// Our session had not noticed yet that its lease is gone (revoked
		// behind its back); the dropped session is replaced by a new one.
		h, err = m.acquireOnce(ctx, try)
	}
	if errors.Is(err, errLeaseGone) {
		err = fmt.Errorf("%w: %w", session.ErrGoneWhileWaiting, err)
	}
	return h, err
}

// errLeaseGone marks an acquisition that failed because the lease was not found.
var errLeaseGone = errors.New("lease not found")

func (m *Mutex) acquireOnce(ctx context.Context, try bool) (*Held, error) {
	s, err := m.sess.Get(ctx)
	if errors.Is(err, session.ErrGoneWhileWaiting) || errors.Is(err, session.ErrClosed) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	a := &attempt{m: m, s: s, key: m.keyOf(s), nonce: m.sess.Nonce(), gate: &grantGate{m: m}, started: s.Clock().Now()}

	// One round trip. When no key at all lives under the name (nobody
	// holds or waits, no semaphore of that name, no name below it), the
	// compare holds and the Txn is only our put: we are the holder, and
	// nothing is read back. Otherwise the other branch puts our key too
	// (a put keeps the create revision of a key this lease already has
	// from an earlier call; its previous value says which it was) and reads
	// the first holder, and the name's semaphore limit key, whose presence
	// says the name is not a lock's.
	put := clientv3.OpPut(a.key, a.nonce, clientv3.WithLease(s.Lease()))
	putPrev := clientv3.OpPut(a.key, a.nonce, clientv3.WithLease(s.Lease()), clientv3.WithPrevKV())
	resp, err := m.client.Txn(ctx).If(m.nameEmpty).Then(put).Else(append([]clientv3.Op{putPrev}, m.firsts...)...).Commit()
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		m.sess.Drop(s)
		return nil, fmt.Errorf("lock: acquire %s: %w: %w", a.key, errLeaseGone, err)
	}
	if err != nil {
		// The put may have been applied although we saw an error: remove
		// it, or it would hold the lock with nobody knowing.
		a.cleanupByNonce(ctx)
		return nil, fmt.Errorf("lock: acquire %s: %w", a.key, err)
	}
	a.created, a.rev = true, resp.Header.Revision
	if resp.Succeeded {
		a.k = s.Hold(a.key, a.rev, m.holdConfig(a.gate))
		return a.held(), nil
	}
	if prev := resp.Responses[0].GetResponsePut().PrevKv; prev != nil {
		a.created, a.rev = false, prev.CreateRevision
	}
	a.k = s.Hold(a.key, a.rev, m.holdConfig(a.gate))
	last := len(resp.Responses) - 1
	if kvs := resp.Responses[last].GetResponseRange().Kvs; len(kvs) > 0 {
		a.cleanup(ctx)
		return nil, primitive.NameInUse(primitive.KindLock, m.name, string(kvs[0].Key), primitive.KindSemaphore)
	}
	firstKeys, err := m.ownKeys(ctx, ranges(resp.Responses[1:last]), 0, true)
	if err != nil {
		a.cleanup(ctx)
		return nil, err
	}
	owner := oldestBlocker(firstKeys, a.rev)
	if owner == nil {
		return a.held(), nil
	}
	if try {
		a.cleanup(ctx)
		return nil, &LockedError{Name: m.name, HolderKey: string(owner.Key), HolderToken: fencing.Token(owner.CreateRevision)}
	}
	if m.cfg.onWait != nil {
		m.cfg.onWait(Waiting{Name: m.name, Key: a.key, HolderKey: string(owner.Key), HolderToken: fencing.Token(owner.CreateRevision)})
	}
	return a.wait(ctx, aheadOf(firstKeys, a.rev))
}

// holdConfig is how the Mutex's keys are held (session.Session.Hold).
func (m *Mutex) holdConfig(gate *grantGate) session.HoldConfig {
	kind := "lock"
	if m.kind == kindRead {
		kind = "rlock"
	}
	// With sessions of its own the Mutex is the only handle that puts keys
	// on their lease, one at a time (Serially): its Unlock is then a plain
	// delete, as concurrency.Mutex's (session.HoldConfig.SoleHandle says
	// why no newer key of the name can exist before the release).
	return session.HoldConfig{OnEnd: gate.onEnd, ReleaseCause: errUnlocked, ReleaseKeepsLease: true, Kind: kind,
		LossWatchDelay: primitive.LossWatchDelay, SoleHandle: m.sess.Owned()}
}

// wait waits for every key created before ours to go, watching only the
// last one of them at a time (no herd).
//
// Why the handoff is fast (the one explanation in this module; lock/doc.go,
// lock/keywatch.go, election and docs/benchmarks.md refer here): etcd's
// watchable store keeps two groups of watchers. A watcher that starts after
// the current revision (or with no start revision) joins the synced group,
// which gets each event as it is committed: it hears the predecessor's
// delete at once. One that starts at or below the current revision must
// first be sent history, so it joins the unsynced group, which a background
// loop catches up only every 100ms. concurrency.Mutex (and Election) watch
// from the revision of their read, so each of their handoffs waits for that
// loop. We watch from "now" and, if the watch reports that it started after
// writes our read did not see, read the key once more instead of asking for
// history. (election's Campaign does the same with the revision after its
// read.)
//
// ahead is what the first read saw ahead of us (every key with a lock
// delay): a key in it that is gone at a later look, with its lease gone,
// was lost.
func (a *attempt) wait(ctx context.Context, ahead map[string]*mvccpb.KeyValue) (*Held, error) {
	c := a.m.client
	clk := a.s.Clock()
	fail := func(err error) (*Held, error) {
		a.cleanup(ctx)
		if errors.Is(err, session.ErrGoneWhileWaiting) && a.m.sess.Closed() {
			err = session.ErrClosed // Close revoked our own session
		}
		return nil, err
	}
	delay := a.m.cfg.LockDelay
	// With a delay: the latest loss of a key ahead of us that we know of;
	// ahead holds every key ahead of us at the last look.
	var lossAt time.Time
	for {
		ops := append([]clientv3.Op{clientv3.OpGet(a.key)}, a.m.blockerOps(a.rev, delay == 0)...)
		if trace := primitive.TraceOf(ctx); trace != nil && trace.OnLook != nil {
			trace.OnLook(a.key)
		}
		resp, err := c.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			if ctx.Err() != nil {
				return fail(context.Cause(ctx))
			}
			return fail(fmt.Errorf("lock: wait for %s: %w", a.m.name, err))
		}
		seen := resp.Header.Revision
		own := resp.Responses[0].GetResponseRange().Kvs
		lists, err := a.m.ownKeys(ctx, ranges(resp.Responses[1:]), a.rev, delay == 0)
		if err != nil {
			if ctx.Err() != nil {
				return fail(context.Cause(ctx))
			}
			return fail(err)
		}
		preds := lastCreated(lists)
		verdict, pred := judgeWait(own, a.rev, preds)
		if delay > 0 && verdict != verdictGone {
			// A key ahead of us that went while we watched another one: was it lost?
			now := clk.Now()
			for k, kv := range ahead {
				if !containsKey(preds, k) && primitive.LeaseGone(ctx, a.m.client, kv.Lease) {
					lossAt = laterOf(lossAt, now)
				}
			}
			ahead = make(map[string]*mvccpb.KeyValue, len(preds))
			for _, kv := range preds {
				ahead[string(kv.Key)] = kv
			}
		}
		switch verdict {
		case verdictGone:
			return fail(fmt.Errorf("%w: key %s vanished", session.ErrGoneWhileWaiting, a.key))
		case verdictHeld:
			if wait := delayLeft(lossAt, delay, clk.Now()); wait > 0 {
				if err := a.pause(ctx, wait); err != nil {
					return fail(err)
				}
				continue // look again: our own key must still be there
			}
			return a.held(), nil
		}
		predCtx, predCancel := context.WithCancel(context.Background())
		predCh := c.Watch(predCtx, string(pred.Key), clientv3.WithCreatedNotify())
		stopExpiry := a.watchExpiry(ctx, pred)
		deletedAt, err := a.waitPredecessor(ctx, predCh, pred, seen)
		stopExpiry()
		predCancel()
		if err != nil {
			return fail(err)
		}
		if delay > 0 && !deletedAt.IsZero() {
			delete(ahead, string(pred.Key))
			if primitive.LeaseGone(ctx, a.m.client, pred.Lease) {
				lossAt = laterOf(lossAt, deletedAt)
			}
		}
	}
}

// watchExpiry revokes pred's lease once it has provably expired (a
// crashed holder: see primitive.WatchExpiry), so that the wait ends at the
// lease's expiry rather than at etcd's next expiry check. Polling the
// lease closely costs requests, so a waiter that is not right behind the
// holder (head) reads a renewed lease only once a second.
func (a *attempt) watchExpiry(ctx context.Context, pred *mvccpb.KeyValue) (stop func()) {
	lease := pred.Lease
	if lease == 0 {
		lease = primitive.LeaseOfKey(a.m.pfx, string(pred.Key))
	}
	head := func(ctx context.Context) bool {
		resp, err := a.m.client.Txn(ctx).Then(a.m.blockerOps(pred.CreateRevision, true)...).Commit()
		if err != nil {
			return false
		}
		lists, err := a.m.ownKeys(ctx, ranges(resp.Responses), pred.CreateRevision, true)
		return err == nil && len(lastCreated(lists)) == 0
	}
	return primitive.WatchExpiry(ctx, a.m.client, a.s.Clock(), []primitive.ExpiryTarget{{Key: string(pred.Key), Lease: lease}},
		primitive.ExpiryConfig{Head: head, OnRevoke: primitive.TraceOf(ctx).Revoked})
}

// pause waits d unless the acquisition must end first.
func (a *attempt) pause(ctx context.Context, d time.Duration) error {
	t := a.s.Clock().NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-a.k.Lost():
		return a.goneWhileWaiting()
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// waitPredecessor returns nil when it is time to look again (the
// predecessor was deleted, or its watch broke) and an error when the
// acquisition must end. deletedAt is when it saw the predecessor deleted
// (zero if it did not).
func (a *attempt) waitPredecessor(ctx context.Context, predCh clientv3.WatchChan, pred *mvccpb.KeyValue, seen int64) (deletedAt time.Time, err error) {
	for {
		select {
		case wr, ok := <-predCh:
			if !ok || wr.Err() != nil {
				// The watch broke (compaction, cancelled by the server): look
				// again after a pause, so that a watch that keeps failing
				// does not turn into a busy loop of reads.
				t := time.NewTimer(50 * time.Millisecond)
				defer t.Stop()
				select {
				case <-t.C:
					return time.Time{}, nil
				case <-ctx.Done():
					return time.Time{}, context.Cause(ctx)
				}
			}
			if wr.Created {
				if wr.Header.Revision > seen {
					// Writes came between our read and the watch: was one of them the delete?
					if there, err := a.stillThere(ctx, string(pred.Key), pred.CreateRevision); err != nil || !there {
						return a.s.Clock().Now(), err
					}
				}
				continue
			}
			if predecessorGone(wr.Events) {
				return a.s.Clock().Now(), nil
			}
		case <-a.k.Lost():
			return time.Time{}, a.goneWhileWaiting()
		case <-ctx.Done():
			return time.Time{}, context.Cause(ctx)
		}
	}
}

// stillThere reads key and reports whether it still has create revision rev.
func (a *attempt) stillThere(ctx context.Context, key string, rev int64) (bool, error) {
	resp, err := a.m.client.Get(ctx, key)
	if err != nil {
		if ctx.Err() != nil {
			return false, context.Cause(ctx)
		}
		return false, nil // look again
	}
	return len(resp.Kvs) > 0 && resp.Kvs[0].CreateRevision == rev, nil
}

// cleanup gives up our key: it removes it if we created it and it is still
// ours. It runs after ctx may be done, so it has its own deadline.
func (a *attempt) cleanup(ctx context.Context) {
	if !a.created {
		a.k.Drop()
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := a.k.Release(cctx); err != nil && !errors.Is(err, session.ErrNotHeld) {
		a.k.Drop() // the delete failed: stop watching; the key goes with the lease
	}
}

// held turns the attempt into the lock it won.
func (a *attempt) held() *Held {
	a.k.Granted(a.started)
	a.gate.grant()
	return &Held{HeldKey: a.k, m: a.m}
}

// goneWhileWaiting is the error of a wait whose own key or session vanished.
func (a *attempt) goneWhileWaiting() error {
	if err := a.s.Err(); err != nil {
		return fmt.Errorf("%w: %w", session.ErrGoneWhileWaiting, err)
	}
	return fmt.Errorf("%w: key %s deleted", session.ErrGoneWhileWaiting, a.key)
}

// cleanupByNonce removes our key when we do not know whether our put was
// applied: the value identifies this attempt.
func (a *attempt) cleanupByNonce(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, _ = a.m.client.Txn(cctx).If(clientv3.Compare(clientv3.Value(a.key), "=", a.nonce)).
		Then(clientv3.OpDelete(a.key)).Commit()
}

// blockerOps reads, for each blocking range of the Mutex's kind, the first
// key created (rev 0) or the keys created before rev, newest first (all of
// them unless limit1).
//
// Without a lock delay (nothing but a key's name and create revision is
// needed) the reads are keys-only. etcd sorts a range by create
// revision over every key of the range, and for a sorted keys-only range
// it reads them from its in-memory index instead of its backend
// (etcdserver/txn/range.go, FastKeysOnly), which makes a waiter's look at
// 1,000 waiters several times cheaper (coordctl bench scale, costs:
// waiter_read_1000keys against read_sorted_keysonly_1000keys). A lock delay
// needs each key's lease, so its reads stay whole.
func (m *Mutex) blockerOps(rev int64, limit1 bool) []clientv3.Op {
	var ops []clientv3.Op
	for _, r := range blockingRanges(m.pfx, m.kind) {
		if rev == 0 {
			ops = append(ops, blockerOp(r, true, 0, true, m.cfg.LockDelay == 0))
		} else {
			ops = append(ops, blockerOp(r, false, rev-1, limit1, m.cfg.LockDelay == 0))
		}
	}
	return ops
}

// blockerOp reads range r by create revision: ascending from bound (0: from
// the first), or descending from bound down; names and revisions only with
// keysOnly (see blockerOps).
func blockerOp(r keyRange, ascending bool, bound int64, limit1, keysOnly bool) clientv3.Op {
	opts := []clientv3.OpOption{clientv3.WithRange(r.end)}
	if keysOnly {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	if ascending {
		opts = append(opts, clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		if bound > 0 {
			opts = append(opts, clientv3.WithMinCreateRev(bound))
		}
	} else {
		opts = append(opts, clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithMaxCreateRev(bound))
	}
	if limit1 {
		opts = append(opts, clientv3.WithLimit(1))
	}
	return clientv3.OpGet(r.start, opts...)
}

// ownKeys is blockerOps' answer (lists, one per blocking range) with only
// the lock's own keys: another name's keys below this one (a lock named
// NAME/child) neither hold nor block it. A read limited to one key whose key
// was another name's is repeated past it; keys are never created before
// ours after the fact, so a later read sees no blocker the first one missed.
// A semaphore's key under the name is an error wrapping session.ErrNameInUse.
func (m *Mutex) ownKeys(ctx context.Context, lists [][]*mvccpb.KeyValue, rev int64, limit1 bool) ([][]*mvccpb.KeyValue, error) {
	rs := blockingRanges(m.pfx, m.kind)
	for i, kvs := range lists {
		for {
			own, foreign, err := primitive.OwnLockKeys(m.name, m.pfx, kvs)
			if err != nil {
				return nil, err
			}
			lists[i] = own
			if foreign == nil || len(own) > 0 || !(rev == 0 || limit1) {
				break
			}
			var op clientv3.Op
			if rev == 0 {
				op = blockerOp(rs[i], true, foreign.CreateRevision+1, true, m.cfg.LockDelay == 0)
			} else {
				op = blockerOp(rs[i], false, foreign.CreateRevision-1, true, m.cfg.LockDelay == 0)
			}
			resp, err := m.client.Do(ctx, op)
			if err != nil {
				return nil, fmt.Errorf("lock: read %s: %w", m.name, err)
			}
			kvs = resp.Get().Kvs
		}
	}
	return lists, nil
}

// ranges returns the key-values of range responses.
func ranges(rs []*etcdserverpb.ResponseOp) [][]*mvccpb.KeyValue {
	out := make([][]*mvccpb.KeyValue, len(rs))
	for i, r := range rs {
		out[i] = r.GetResponseRange().Kvs
	}
	return out
}
