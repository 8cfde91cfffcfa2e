package semaphore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/session"
)

// cleanupTimeout bounds the requests that undo a failed Acquire; they run
// after the caller's context may have ended.
const cleanupTimeout = 5 * time.Second

// Waiting describes an Acquire that has to wait; see WithOnWait.
type Waiting struct {
	Name string
	// Key is the waiter's queue key; Ahead is true if another waiter is
	// before it, false if it waits for a slot.
	Key   string
	Ahead bool
	// Limit is the semaphore's limit (New's).
	Limit int
}

// config is a Semaphore's configuration: what every primitive has
// (primitive.Config, whose Validate holds the rules, the limit among them)
// and the wait notice.
type config struct {
	primitive.Config
	onWait func(Waiting)
}

// Option configures a Semaphore (and SetLimit and Delete: WithPrefix).
type Option func(*config)

// WithSession makes the Semaphore hold its slots on s instead of on
// sessions of its own. The caller closes s; Close does not.
func WithSession(s *session.Session) Option { return func(c *config) { c.Session = s } }

// WithLockDelay makes the waiter at the head of the queue, when it saw a
// slot's holder lost (slot key deleted and its lease gone), wait d after
// that deletion before it takes that slot. A clean Release costs no delay.
// Default 0: off.
func WithLockDelay(d time.Duration) Option { return func(c *config) { c.LockDelay = d } }

// WithOnWait is called once per Acquire that has to wait, before it waits.
// It must not block.
func WithOnWait(fn func(Waiting)) Option { return func(c *config) { c.onWait = fn } }

// WithPrefix puts the semaphore's keys under p+name+"/", p as given (see
// lock.WithPrefix).
func WithPrefix(p string) Option { return func(c *config) { c.Prefix = p } }

// WithSessionOptions passes options to the Semaphore's own sessions. Not
// with WithSession.
func WithSessionOptions(opts ...session.Option) Option {
	return func(c *config) { c.SessionOptions = append(c.SessionOptions, opts...) }
}

// WithTTL sets the lease TTL of the Semaphore's own sessions (default
// session.DefaultTTL; bounds: session.CheckTTL). Not with WithSession.
func WithTTL(d time.Duration) Option { return func(c *config) { c.TTL = d } }

// Semaphore is a fenced, FIFO counting semaphore on etcd: at most limit
// holders at once, each in its own slot. Safe for concurrent use: each
// Acquire through it is a holder of its own (its own queue key, slot, token
// and Release), so goroutines can share one Semaphore and one session.
type Semaphore struct {
	client *clientv3.Client
	name   string
	pfx    string
	limit  int
	cfg    config
	sess   *primitive.Lazy
}

// New returns a Semaphore named name with limit slots on client. It does no
// I/O. It refuses a name that cannot be what its user meant (an error
// wrapping session.ErrInvalidName that names the rule, as lock.New) and a
// limit below 1, both also matching ErrInvalid, and a TTL out of bounds
// (session.ErrBadTTL).
func New(client *clientv3.Client, name string, limit int, opts ...Option) (*Semaphore, error) {
	cfg := newConfig(name, limit, opts)
	if client == nil {
		return nil, errors.New("semaphore: nil client")
	}
	if err := cfg.Validate(); err != nil {
		return nil, invalid(err)
	}
	return &Semaphore{
		client: client, name: name, pfx: cfg.KeyPrefix(), limit: limit, cfg: cfg,
		sess: primitive.NewLazy(client, cfg.Session, cfg.OwnSessionOptions()...),
	}, nil
}

func newConfig(name string, limit int, opts []Option) config {
	cfg := config{Config: primitive.Config{Kind: primitive.KindSemaphore, Name: name, Limit: limit}}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// invalid is Validate's error as the semaphore's: a name's or a limit's
// also matches ErrInvalid.
func invalid(err error) error {
	if errors.Is(err, session.ErrInvalidName) || errors.Is(err, primitive.ErrInvalid) {
		return fmt.Errorf("semaphore: %w: %w", ErrInvalid, err)
	}
	return fmt.Errorf("semaphore: %w", err)
}

// Name returns the semaphore's name; Limit its number of slots.
func (s *Semaphore) Name() string { return s.name }

// Limit returns the number of slots this Semaphore expects.
func (s *Semaphore) Limit() int { return s.limit }

func (s *Semaphore) limitKey() string { return s.pfx + limitSuffix }
func (s *Semaphore) queuePfx() string { return s.pfx + queueInfix }
func (s *Semaphore) slotsPfx() string { return s.pfx + slotsInfix }
func (s *Semaphore) slotKey(i int) string {
	return s.slotsPfx() + strconv.Itoa(i)
}

// queueKey is one acquisition's queue key: the lease and the attempt's
// nonce, unique to it, so that acquisitions through one handle (or through
// handles on one session) queue as the separate holders they will be.
func (s *Semaphore) queueKey(sess *session.Session, nonce string) string {
	return fmt.Sprintf("%s%x-%s", s.queuePfx(), int64(sess.Lease()), nonce)
}

// Close ends the Semaphore. If it created its session, Close revokes the
// lease, which releases a slot still held (its Held reports the loss).
func (s *Semaphore) Close() error { return s.sess.Close() }

// Acquire blocks until it holds a slot, then returns it with its slot
// number and fencing token. Waiters are served in the order they asked
// (FIFO). If ctx ends first, Acquire removes its queue key (and a slot key
// whose grant it could not confirm) and returns ctx's error. It returns a
// error matching ErrLimitMismatch if the name's stored limit is not this
// Semaphore's, session.ErrGoneWhileWaiting if its key or session vanished while it
// waited, ErrClosed after Close, and etcd's error if a request failed.
//
// Acquisitions through one Semaphore are independent holders: ten
// goroutines sharing it, with limit 10, hold ten slots at once, each with
// its own queue key, slot, token and Release.
func (s *Semaphore) Acquire(ctx context.Context) (*Held, error) {
	return s.acquire(ctx, false)
}

// TryAcquire takes a slot if one is free and nobody waits before it, and
// returns an error matching ErrNoSlot at once otherwise.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Held, error) {
	return s.acquire(ctx, true)
}

var errLeaseGone = errors.New("lease not found")

func (s *Semaphore) acquire(ctx context.Context, try bool) (*Held, error) {
	h, err := s.acquireOnce(ctx, try)
	if errors.Is(err, errLeaseGone) && s.sess.Owned() {
		h, err = s.acquireOnce(ctx, try)
	}
	if errors.Is(err, errLeaseGone) {
		err = fmt.Errorf("%w: %w", session.ErrGoneWhileWaiting, err)
	}
	return h, err
}

// attempt is one acquisition in progress.
type attempt struct {
	s      *Semaphore
	sess   *session.Session
	qkey   string
	qrev   int64
	nonce  string
	queued bool // we put the queue key
	lostAt map[int]time.Time
	ahead  map[int]*mvccpb.KeyValue // slots held at the last look (with a lock delay)

	started time.Time // for the grant's event (session.HeldKey.Granted)
}

func (s *Semaphore) acquireOnce(ctx context.Context, try bool) (*Held, error) {
	sess, err := s.sess.Get(ctx)
	if errors.Is(err, session.ErrGoneWhileWaiting) || errors.Is(err, session.ErrClosed) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("semaphore: %w", err)
	}
	nonce := s.sess.Nonce()
	a := &attempt{s: s, sess: sess, qkey: s.queueKey(sess, nonce), nonce: nonce, lostAt: map[int]time.Time{}, started: sess.Clock().Now()}

	// One round trip: store the limit if none is stored, queue our key
	// unless this lease has one, and read the stored limit back.
	lk := s.limitKey()
	// The limit is stored only if no lock keeps keys under the name.
	storeLimit := clientv3.OpTxn(
		[]clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(lk), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(s.pfx+"0"), "=", 0).WithRange(s.pfx + "g"),
			clientv3.Compare(clientv3.CreateRevision(s.pfx+primitive.ReaderInfix), "=", 0).WithPrefix(),
			clientv3.Compare(clientv3.CreateRevision(s.pfx+primitive.WriterInfix), "=", 0).WithPrefix(),
		},
		[]clientv3.Op{clientv3.OpPut(lk, strconv.Itoa(s.limit))}, nil)
	then := append([]clientv3.Op{storeLimit, clientv3.OpPut(a.qkey, a.nonce, clientv3.WithLease(sess.Lease())), clientv3.OpGet(lk)}, s.lockKeyOps()...)
	els := append([]clientv3.Op{clientv3.OpGet(a.qkey), clientv3.OpGet(lk)}, s.lockKeyOps()...)
	resp, err := s.client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(a.qkey), "=", 0)).
		Then(then...).Else(els...).Commit()
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		s.sess.Drop(sess)
		return nil, fmt.Errorf("semaphore: acquire %s: %w: %w", a.qkey, errLeaseGone, err)
	}
	if err != nil {
		a.cleanupByNonce(ctx, -1)
		return nil, fmt.Errorf("semaphore: acquire %s: %w", a.qkey, err)
	}
	a.queued = resp.Succeeded
	var limitKvs []*mvccpb.KeyValue
	if resp.Succeeded {
		a.qrev = resp.Header.Revision
		limitKvs = resp.Responses[2].GetResponseRange().Kvs
	} else {
		a.qrev = resp.Responses[0].GetResponseRange().Kvs[0].CreateRevision
		limitKvs = resp.Responses[1].GetResponseRange().Kvs
	}
	for _, r := range resp.Responses[len(resp.Responses)-len(s.lockKeyOps()):] {
		for _, kv := range r.GetResponseRange().Kvs {
			if primitive.RoleOf(s.pfx, string(kv.Key)).IsLock() {
				a.cleanup(ctx)
				return nil, primitive.NameInUse(primitive.KindSemaphore, s.name, string(kv.Key), primitive.KindLock)
			}
		}
	}
	if stored, ok := primitive.StoredLimit(limitKvs); ok && stored != s.limit {
		a.cleanup(ctx)
		return nil, limitMismatch(s.name, stored, s.limit)
	}
	return a.run(ctx, try)
}

// run looks at the queue and the slots until it holds a slot. A waiter with
// another waiter before it watches only that one; the head of the queue
// watches the slots. So a release wakes only the head, and a grant (which
// deletes the head's queue key) wakes only the next waiter.
func (a *attempt) run(ctx context.Context, try bool) (*Held, error) {
	s := a.s
	c := s.client
	fail := func(err error) (*Held, error) {
		a.cleanup(ctx)
		if errors.Is(err, session.ErrGoneWhileWaiting) && s.sess.Closed() {
			err = session.ErrClosed
		}
		return nil, err
	}
	notified := false
	for {
		if trace := primitive.TraceOf(ctx); trace != nil && trace.OnLook != nil {
			trace.OnLook(a.qkey)
		}
		resp, err := c.Txn(ctx).Then(
			clientv3.OpGet(a.qkey),
			// Keys-only: etcd serves a sorted keys-only range from its index
			// (why: lock/mutex.go, blockerOps).
			clientv3.OpGet(s.queuePfx(), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend),
				clientv3.WithMaxCreateRev(a.qrev-1), clientv3.WithLimit(1), clientv3.WithKeysOnly()),
			clientv3.OpGet(s.slotsPfx(), clientv3.WithPrefix()),
			clientv3.OpGet(s.limitKey()),
		).Commit()
		if err != nil {
			if ctx.Err() != nil {
				return fail(context.Cause(ctx))
			}
			return fail(fmt.Errorf("semaphore: wait for %s: %w", s.name, err))
		}
		seen := resp.Header.Revision
		own := resp.Responses[0].GetResponseRange().Kvs
		if len(own) == 0 || own[0].CreateRevision != a.qrev {
			return fail(fmt.Errorf("%w: key %s vanished", session.ErrGoneWhileWaiting, a.qkey))
		}
		limit, ok := primitive.StoredLimit(resp.Responses[3].GetResponseRange().Kvs)
		if !ok {
			// Deleted by an operator (or never stored): store ours again.
			lk := s.limitKey()
			if _, err := c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(lk), "=", 0)).
				Then(clientv3.OpPut(lk, strconv.Itoa(s.limit))).Commit(); err != nil {
				return fail(fmt.Errorf("semaphore: store limit of %s: %w", s.name, err))
			}
			continue
		}
		if limit != s.limit {
			return fail(limitMismatch(s.name, limit, s.limit))
		}
		slots := heldSlots(s.slotsPfx(), resp.Responses[2].GetResponseRange().Kvs)
		a.noteLosses(ctx, slots)

		var watchKey string
		var watchOpts []clientv3.OpOption
		var predRev int64
		if preds := resp.Responses[1].GetResponseRange().Kvs; len(preds) > 0 {
			if try {
				return fail(noSlot(s.name, limit, len(slots), true))
			}
			watchKey, predRev = string(preds[0].Key), preds[0].CreateRevision
		} else {
			held := make(map[int]bool, len(slots))
			for i := range slots {
				held[i] = true
			}
			ch := chooseSlot(held, limit, a.lostAt, s.cfg.LockDelay, a.sess.Clock().Now())
			switch {
			case ch.take:
				h, retry, err := a.grant(ctx, ch.slot, seen)
				if err != nil {
					return fail(err)
				}
				if !retry {
					return h, nil
				}
				continue
			case try:
				return fail(noSlot(s.name, limit, len(slots), false))
			case ch.wait > 0:
				if err := a.pause(ctx, ch.wait); err != nil {
					return fail(err)
				}
				continue
			}
			watchKey, watchOpts = s.slotsPfx(), []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithPrevKV()}
		}
		if !notified && s.cfg.onWait != nil {
			notified = true
			s.cfg.onWait(Waiting{Name: s.name, Key: a.qkey, Ahead: watchKey != s.slotsPfx(), Limit: s.limit})
		}
		var holders []primitive.ExpiryTarget // the head revokes a crashed holder's lease at its expiry
		if predRev == 0 {
			for _, kv := range slots {
				holders = append(holders, primitive.ExpiryTarget{Key: string(kv.Key), Lease: kv.Lease})
			}
		}
		if err := a.watch(ctx, watchKey, watchOpts, predRev, seen, holders); err != nil {
			return fail(err)
		}
	}
}

// noteLosses records, with a lock delay, the slots held at the last look
// that are gone now and whose lease is gone too: their holder was lost.
func (a *attempt) noteLosses(ctx context.Context, slots map[int]*mvccpb.KeyValue) {
	if a.s.cfg.LockDelay <= 0 {
		return
	}
	now := a.sess.Clock().Now()
	for i, kv := range a.ahead {
		if cur, ok := slots[i]; ok && cur.CreateRevision == kv.CreateRevision {
			continue
		}
		if _, seen := a.lostAt[i]; !seen && primitive.LeaseGone(ctx, a.s.client, kv.Lease) {
			a.lostAt[i] = now
		}
	}
	a.ahead = slots
}

// watch waits for a delete under key (the waiter before us, created at
// predRev, or any slot: predRev 0) after revision seen, for our own queue
// key to go, or for the session to end. The watch starts from "now"; if it
// started after seen, the waiter before us is read once more (it may have
// gone in between), and the head looks at the slots again. Meanwhile the
// head revokes the lease of a holder (of holders) once it has provably
// expired (primitive.WatchExpiry), so a crashed holder's slot is free at
// its lease's expiry, not at etcd's next expiry check.
func (a *attempt) watch(ctx context.Context, key string, opts []clientv3.OpOption, predRev, seen int64, holders []primitive.ExpiryTarget) error {
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopExpiry := primitive.WatchExpiry(ctx, a.s.client, a.sess.Clock(), holders, primitive.ExpiryConfig{OnRevoke: primitive.TraceOf(ctx).Revoked})
	defer stopExpiry()
	ch := a.s.client.Watch(wctx, key, append(opts, clientv3.WithCreatedNotify(), clientv3.WithFilterPut())...)
	own := a.s.client.Watch(wctx, a.qkey, clientv3.WithRev(seen+1), clientv3.WithFilterPut())
	for {
		select {
		case wr, ok := <-ch:
			if !ok || wr.Err() != nil {
				return a.pause(ctx, 50*time.Millisecond)
			}
			if wr.Created {
				if wr.Header.Revision > seen && (predRev == 0 || !a.stillThere(ctx, key, predRev)) {
					return nil // writes came between our read and the watch: look again
				}
				continue
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					a.deleted(ctx, ev)
					return nil
				}
			}
		case wr, ok := <-own:
			if !ok || wr.Err() != nil {
				own = nil // the session's end still ends us
				continue
			}
			if len(wr.Events) > 0 {
				return fmt.Errorf("%w: key %s deleted", session.ErrGoneWhileWaiting, a.qkey)
			}
		case <-a.sess.Done():
			return fmt.Errorf("%w: %w", session.ErrGoneWhileWaiting, a.sess.Err())
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// stillThere reads key and reports whether it still has create revision
// rev; a failed read reports false (look again).
func (a *attempt) stillThere(ctx context.Context, key string, rev int64) bool {
	resp, err := a.s.client.Get(ctx, key)
	return err == nil && len(resp.Kvs) > 0 && resp.Kvs[0].CreateRevision == rev
}

// deleted notes, with a lock delay, a slot whose key we saw deleted while
// its lease is gone: the delay counts from now.
func (a *attempt) deleted(ctx context.Context, ev *mvccpb.Event) {
	if a.s.cfg.LockDelay <= 0 || ev.PrevKv == nil {
		return
	}
	i, ok := primitive.SlotOf(a.s.slotsPfx(), string(ev.PrevKv.Key))
	if !ok {
		return
	}
	now := a.sess.Clock().Now()
	if primitive.LeaseGone(ctx, a.s.client, ev.PrevKv.Lease) {
		a.lostAt[i] = now
	}
	delete(a.ahead, i)
}

func (a *attempt) pause(ctx context.Context, d time.Duration) error {
	t := a.sess.Clock().NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-a.sess.Done():
		return fmt.Errorf("%w: %w", session.ErrGoneWhileWaiting, a.sess.Err())
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// grant takes slot i in one transaction that holds only if, since our look
// at revision seen, no slot key was created (so fewer than limit are held),
// the limit is unchanged and our queue key is still ours. retry is true if
// the transaction did not hold: look again.
func (a *attempt) grant(ctx context.Context, i int, seen int64) (h *Held, retry bool, err error) {
	s := a.s
	key := s.slotKey(i)
	resp, err := s.client.Txn(ctx).If(
		clientv3.Compare(clientv3.CreateRevision(a.qkey), "=", a.qrev),
		clientv3.Compare(clientv3.Value(s.limitKey()), "=", strconv.Itoa(s.limit)),
		clientv3.Compare(clientv3.CreateRevision(s.slotsPfx()), "<", seen+1).WithPrefix(),
		clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
	).Then(
		clientv3.OpPut(key, a.nonce, clientv3.WithLease(a.sess.Lease())),
		clientv3.OpDelete(a.qkey),
	).Commit()
	if err != nil {
		// The grant may have been applied although we saw an error: undo
		// it, or a slot would be held with nobody knowing.
		a.cleanupByNonce(ctx, i)
		if ctx.Err() != nil {
			return nil, false, context.Cause(ctx)
		}
		return nil, false, fmt.Errorf("semaphore: take slot %s: %w", key, err)
	}
	if !resp.Succeeded {
		return nil, true, nil
	}
	a.queued = false
	return a.held(i, key, resp.Header.Revision), false, nil
}

// cleanup removes our queue key if we put it and it is still ours.
func (a *attempt) cleanup(ctx context.Context) {
	if !a.queued {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, _ = a.s.client.Txn(cctx).If(clientv3.Compare(clientv3.CreateRevision(a.qkey), "=", a.qrev)).
		Then(clientv3.OpDelete(a.qkey)).Commit()
}

// cleanupByNonce removes our queue key and slot key slot (if slot >= 0)
// when we do not know whether our put was applied: the value identifies
// this attempt.
func (a *attempt) cleanupByNonce(ctx context.Context, slot int) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	c := a.s.client
	_, _ = c.Txn(cctx).If(clientv3.Compare(clientv3.Value(a.qkey), "=", a.nonce)).Then(clientv3.OpDelete(a.qkey)).Commit()
	if slot >= 0 {
		key := a.s.slotKey(slot)
		_, _ = c.Txn(cctx).If(clientv3.Compare(clientv3.Value(key), "=", a.nonce)).Then(clientv3.OpDelete(key)).Commit()
	}
}

// SetLimit stores a new limit for the semaphore named name (WithPrefix
// places it; other options are ignored). Grants made after it use the new limit. Holders keep
// their slots: after a lower limit, slots at or above it stay held until
// released, and no new slot is granted while limit or more are held.
// Semaphores built with another limit get ErrLimitMismatch from their next
// Acquire, and their waiters at their next look.
func SetLimit(ctx context.Context, client *clientv3.Client, name string, limit int, opts ...Option) error {
	cfg := newConfig(name, limit, opts)
	if err := cfg.Validate(); err != nil {
		return invalid(err)
	}
	if _, err := client.Put(ctx, cfg.KeyPrefix()+limitSuffix, strconv.Itoa(limit)); err != nil {
		return fmt.Errorf("semaphore: set limit of %s: %w", name, err)
	}
	return nil
}

// lockKeyOps read the first key of each range a lock of the same name
// keeps its keys in (NAME/<lease hex>, NAME/read/, NAME/write/): a key there
// means the name is a lock's. Keys only, one each.
func (s *Semaphore) lockKeyOps() []clientv3.Op {
	one := []clientv3.OpOption{clientv3.WithKeysOnly(), clientv3.WithLimit(1)}
	return []clientv3.Op{
		clientv3.OpGet(s.pfx+"0", append(one, clientv3.WithRange(s.pfx+"g"))...), // lease IDs in hex
		clientv3.OpGet(s.pfx+primitive.ReaderInfix, append(one, clientv3.WithPrefix())...),
		clientv3.OpGet(s.pfx+primitive.WriterInfix, append(one, clientv3.WithPrefix())...),
	}
}

// Delete removes the semaphore named name (WithPrefix places it; other
// options are ignored) from etcd, so that it can be used again with another limit: its stored
// limit, and with force its slot and queue keys too (their holders lose
// their slots at once, their waiters get session.ErrGoneWhileWaiting). Without force
// it is refused with an error matching ErrInUse while a slot is held or a
// waiter queued. It reports whether there was anything to delete.
func Delete(ctx context.Context, client *clientv3.Client, name string, force bool, opts ...Option) (bool, error) {
	cfg := newConfig(name, 0, opts)
	if err := cfg.ValidateKeys(); err != nil {
		return false, invalid(err)
	}
	pfx := cfg.KeyPrefix()
	limit, queue, slots := pfx+limitSuffix, pfx+queueInfix, pfx+slotsInfix
	dels := []clientv3.Op{clientv3.OpDelete(limit)}
	var conds []clientv3.Cmp
	if force {
		dels = append(dels, clientv3.OpDelete(queue, clientv3.WithPrefix()), clientv3.OpDelete(slots, clientv3.WithPrefix()))
	} else {
		conds = []clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(slots), "=", 0).WithPrefix(),
			clientv3.Compare(clientv3.CreateRevision(queue), "=", 0).WithPrefix(),
		}
	}
	resp, err := client.Txn(ctx).If(conds...).Then(dels...).Else(
		clientv3.OpGet(slots, clientv3.WithPrefix(), clientv3.WithCountOnly()),
		clientv3.OpGet(queue, clientv3.WithPrefix(), clientv3.WithCountOnly()),
	).Commit()
	if err != nil {
		return false, fmt.Errorf("semaphore: delete %s: %w", name, err)
	}
	if !resp.Succeeded {
		return false, inUse(name, int(resp.Responses[0].GetResponseRange().Count), int(resp.Responses[1].GetResponseRange().Count))
	}
	var n int64
	for _, r := range resp.Responses {
		n += r.GetResponseDeleteRange().Deleted
	}
	return n > 0, nil
}
