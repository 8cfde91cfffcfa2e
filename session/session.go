package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultTTL is the lease TTL when WithTTL is not given.
const DefaultTTL = 10 * time.Second

// Event reports what a session observed, for metrics and logs: one of its
// keepalives, its loss, or what happened to a key held on it (Key set):
// granted to its holder (Held), released (Released) or lost (Lost). A key
// reports its end (released or lost) once, and only if it was granted: a
// key that an acquisition gave up while it waited reports nothing.
type Event struct {
	// KeepAliveLatency is the round trip of a successful keepalive; zero
	// for a failed one, for loss and for a key's events.
	KeepAliveLatency time.Duration
	// SentAt is when the keepalive the server answered was sent (the
	// instant the deadline is measured from); zero unless it succeeded.
	SentAt time.Time
	// Deadline is the local deadline after the event.
	Deadline time.Time
	// Err is the failed keepalive's error, or the loss reason when Lost:
	// the session's (ErrExpired, ErrRevoked), or for a key an error
	// wrapping ErrLost and the reason (HeldKey.Err).
	Err error
	// Lost is true on the one event that reports the session's loss, and
	// on the one that reports a held key's.
	Lost bool

	// Key is the held key the event is about; empty for the session's own
	// events.
	Key string
	// Kind is what the key is ("lock", "rlock", "semaphore", "election":
	// HoldConfig.Kind).
	Kind string
	// Held is true on the event of a key granted to its holder (HeldKey.Granted);
	// Waited is then how long its acquisition waited.
	Held   bool
	Waited time.Duration
	// Released is true on the event of a key that ended by Release (or
	// Drop) before any loss.
	Released bool
}

type config struct {
	ttl      time.Duration
	grant    time.Duration
	margin   time.Duration
	interval time.Duration
	clock    Clock
	leaseID  clientv3.LeaseID
	observer func(Event)
	// keepaliver sends the keepalives (keepaliver.go); nil: one of the
	// session's own.
	keepaliver *Keepaliver
}

// Option configures a Session.
type Option func(*config)

// WithTTL sets the lease TTL, rounded up to whole seconds (etcd's unit). The
// server may grant more (its minimum TTL); the session uses what it grants.
func WithTTL(ttl time.Duration) Option { return func(c *config) { c.ttl = ttl } }

// WithMargin sets how long before the earliest possible server-side expiry
// the session declares loss. Default: a tenth of the TTL, at least 200ms.
func WithMargin(m time.Duration) Option { return func(c *config) { c.margin = m } }

// WithKeepAliveInterval sets the time between keepalives. Default: TTL/3.
func WithKeepAliveInterval(d time.Duration) Option { return func(c *config) { c.interval = d } }

// WithGrantTimeout bounds the request that grants (or adopts) the lease.
// Default: the TTL — a lease that takes longer than its TTL to grant is
// of no use. New returns ErrUnavailable when it passes.
func WithGrantTimeout(d time.Duration) Option { return func(c *config) { c.grant = d } }

// WithClock sets the clock of the local deadline (tests).
func WithClock(clk Clock) Option { return func(c *config) { c.clock = clk } }

// WithLease adopts an existing lease instead of granting a new one; its
// deadline starts from the first keepalive.
func WithLease(id clientv3.LeaseID) Option { return func(c *config) { c.leaseID = id } }

// WithObserver is called after each keepalive, once on the session's loss,
// and on each event of a key held on it (Event): from the keepalive
// goroutine, or from the goroutine that held, released or saw the loss of
// a key, so several calls can run at once. It must not block. Package
// metrics turns the events into Prometheus metrics.
func WithObserver(fn func(Event)) Option { return func(c *config) { c.observer = fn } }

// Session is a lease kept alive with a local deadline. See the package doc.
type Session struct {
	client   *clientv3.Client
	cfg      config
	lease    clientv3.LeaseID
	ttl      time.Duration
	deadline *deadline
	ka       *Keepaliver

	ctx    context.Context
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	err     error
	keys    int // held keys (HeldKey) not yet ended
	cleanly int // held keys that ended by a clean Release and keep the lease
	closing chan struct{}
	stopped chan struct{}
	once    sync.Once
}

// New grants a lease (or adopts one, WithLease) and starts keeping it alive
// until Close or loss. ctx bounds the grant only, not the session's life. It
// returns ErrBadTTL for a TTL under 1s or one etcd would refuse
// (CheckTTL), and etcd's error if the grant fails.
func New(ctx context.Context, client *clientv3.Client, opts ...Option) (*Session, error) {
	cfg := config{ttl: DefaultTTL, clock: RealClock{}}
	for _, o := range opts {
		o(&cfg)
	}
	if err := CheckTTL(cfg.ttl); err != nil {
		return nil, err
	}
	seconds := int64((cfg.ttl + time.Second - 1) / time.Second)

	if cfg.grant <= 0 {
		cfg.grant = time.Duration(seconds) * time.Second
	}
	// A member without a leader answers at once instead of queueing the
	// request; the timeout covers members that do not answer at all.
	gctx, cancelGrant := context.WithTimeout(clientv3.WithRequireLeader(ctx), cfg.grant)
	defer cancelGrant()
	sentAt := cfg.clock.Now()
	lease := cfg.leaseID
	var granted time.Duration
	if lease == clientv3.NoLease {
		resp, err := client.Grant(gctx, seconds)
		if err != nil {
			return nil, grantError(ctx, gctx, "grant lease", cfg.grant, err)
		}
		lease, granted = resp.ID, time.Duration(resp.TTL)*time.Second
	} else {
		resp, err := client.KeepAliveOnce(gctx, lease)
		if err != nil {
			return nil, grantError(ctx, gctx, fmt.Sprintf("adopt lease %x", int64(lease)), cfg.grant, err)
		}
		granted = time.Duration(resp.TTL) * time.Second
	}
	if cfg.margin <= 0 {
		cfg.margin = DefaultMargin(granted)
	}
	if cfg.margin >= granted {
		return nil, fmt.Errorf("session: margin %s must be below the TTL %s", cfg.margin, granted)
	}
	if cfg.interval <= 0 {
		cfg.interval = granted / 3
	}

	sctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	s := &Session{
		client:   client,
		cfg:      cfg,
		lease:    lease,
		ttl:      granted,
		deadline: newDeadline(sentAt, granted, cfg.margin),
		ctx:      sctx,
		cancel:   cancel,
		closing:  make(chan struct{}),
		stopped:  make(chan struct{}),
		ka:       cfg.keepaliver,
	}
	if s.ka == nil {
		s.ka = NewKeepaliver(client, KeepaliverConfig{})
	}
	s.ka.acquire()
	go s.run(context.WithoutCancel(ctx))
	return s, nil
}

// grantError says why a grant failed: the caller's context, an etcd with no
// leader or no answer in time (ErrUnavailable), or etcd's own error.
func grantError(ctx, gctx context.Context, what string, timeout time.Duration, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("session: %s: %w", what, ctx.Err())
	case errors.Is(err, rpctypes.ErrNoLeader):
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, what, err)
	case gctx.Err() != nil:
		return fmt.Errorf("%w: %s: no answer within %s", ErrUnavailable, what, timeout)
	default:
		return fmt.Errorf("session: %s: %w", what, err)
	}
}

// Lease returns the lease ID.
func (s *Session) Lease() clientv3.LeaseID { return s.lease }

// TTL returns the TTL the server granted.
func (s *Session) TTL() time.Duration { return s.ttl }

// Client returns the etcd client the session uses.
func (s *Session) Client() *clientv3.Client { return s.client }

// Done is closed when the session is lost or closed.
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }

// Context is cancelled when the session is lost or closed; its cause is Err.
func (s *Session) Context() context.Context { return s.ctx }

// Err returns nil while the session lives, then why it ended: ErrExpired,
// ErrRevoked or ErrClosed.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Alive reports, at this instant, whether the lease can still be trusted.
// Check it right before a protected write; it turns false at the local
// deadline even if the keepalive goroutine has not run yet.
func (s *Session) Alive() bool {
	if s.ctx.Err() != nil {
		return false
	}
	if !s.deadline.Alive(s.cfg.clock.Now()) {
		s.end(ErrExpired)
		return false
	}
	return true
}

// Deadline returns the current local deadline.
func (s *Session) Deadline() time.Time { return s.deadline.Until() }

// Close stops the keepalives and revokes the lease, so that whatever is held
// on it is released at once. It waits at most a few seconds for the revoke.
// Calling it again is a no-op.
//
// The release policy: when no key is held on the session any more and at
// least one ended by a clean Release (HeldKey.Release before any loss) of a
// key held with HoldConfig.ReleaseKeepsLease (a lock or a semaphore slot), Close does
// not revoke the lease but leaves it to expire on the server, as
// Orphan does; nothing is attached to it then. A waiter with a lock delay
// tells a holder's release from its loss by whether the lease of the key it
// saw deleted still exists, and a revoke sent right after the release could
// reach etcd before that waiter asks: so a clean release never looks like a
// loss, in whatever order the holder calls Release (Unlock, Resign) and
// Close.
func (s *Session) Close() error {
	keep := s.leaveToExpire() // before end: ending the session ends the keys on it
	s.end(ErrClosed)
	<-s.stopped
	if keep {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := s.client.Revoke(ctx, s.lease)
	if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("session: revoke lease %x: %w", int64(s.lease), err)
	}
	return nil
}

// leaveToExpire is Close's release policy: nothing held, something released cleanly.
func (s *Session) leaveToExpire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys == 0 && s.cleanly > 0
}

// keyHeld and keyEnded count the HeldKeys on the session for Close.
func (s *Session) keyHeld() {
	s.mu.Lock()
	s.keys++
	s.mu.Unlock()
}

func (s *Session) keyEnded(clean bool) {
	s.mu.Lock()
	s.keys--
	if clean {
		s.cleanly++
	}
	s.mu.Unlock()
}

// Clock returns the clock of the session's deadline: the one to read time
// from in decisions that go with it (a lock delay, for one).
func (s *Session) Clock() Clock { return s.cfg.clock }

// Orphan stops the keepalives without revoking the lease: what is held on it
// is released when the lease expires on the server. Done closes with ErrClosed.
func (s *Session) Orphan() {
	s.end(ErrClosed)
	<-s.stopped
}

// end records why the session ended (the first reason wins) and cancels it.
// It reports whether this call ended it.
func (s *Session) end(reason error) (ended bool) {
	s.once.Do(func() {
		ended = true
		s.deadline.MarkLost()
		s.mu.Lock()
		s.err = reason
		s.mu.Unlock()
		s.cancel(reason)
		close(s.closing)
	})
	return ended
}

func (s *Session) notify(ev Event) {
	if s.cfg.observer != nil {
		s.cfg.observer(ev)
	}
}

// run keeps the lease alive until loss or Close. A timer armed at the local
// deadline ends the session the instant it passes.
func (s *Session) run(parent context.Context) {
	defer close(s.stopped)
	defer s.ka.release()
	clk := s.cfg.clock
	retry := max(min(s.cfg.interval/4, 250*time.Millisecond), 20*time.Millisecond)
	next, regular := s.cfg.interval, true
	for {
		expiry := clk.NewTimer(s.deadline.Until().Sub(clk.Now()))
		wait := next
		if regular {
			wait = s.ka.align(clk.Now(), next) // keepalives of a stream go out together
		}
		tick := clk.NewTimer(wait)
		select {
		case <-s.closing:
			expiry.Stop()
			tick.Stop()
			return
		case <-expiry.C():
			tick.Stop()
			if !s.deadline.Alive(clk.Now()) {
				s.lose(ErrExpired)
				return
			}
			continue // the deadline moved while the timer ran
		case <-tick.C():
			expiry.Stop()
		}
		start := clk.Now()
		ok, lost := s.keepAlive(parent)
		if lost != nil {
			s.lose(lost)
			return
		}
		// Keepalives go out every interval from send to send, so that their
		// rate is N/interval however long the answers take.
		next, regular = retry, ok
		if ok {
			next = max(s.cfg.interval-clk.Now().Sub(start), 0)
		}
	}
}

// lose ends the session by loss, and reports it unless it had ended already
// (Close, or another loss).
func (s *Session) lose(reason error) {
	if s.end(reason) {
		s.notify(Event{Lost: true, Err: reason, Deadline: s.deadline.Until()})
	}
}

// leaseGone asks etcd, once and briefly, whether the lease is gone (revoked,
// or expired on the server). An error or no answer in time counts as not
// known to be gone.
func (s *Session) leaseGone(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, leaseCheckTimeout)
	defer cancel()
	resp, err := s.client.TimeToLive(ctx, s.lease)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return true
	}
	return err == nil && resp.TTL <= 0
}

// leaseCheckTimeout bounds leaseGone. It delays the loss it names (see
// HeldKey.loseGone), so it is short: beyond it the reason is the key's
// deletion alone.
const leaseCheckTimeout = 250 * time.Millisecond

// keepAlive sends one keepalive bounded by the local deadline. It returns
// ok when the lease was renewed and a non-nil loss reason when the session
// must end.
func (s *Session) keepAlive(parent context.Context) (ok bool, loss error) {
	clk := s.cfg.clock
	start := clk.Now()
	budget := s.deadline.Until().Sub(start)
	if budget <= 0 {
		return false, ErrExpired
	}
	ctx, cancel := context.WithTimeout(parent, budget)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel) // Close interrupts a keepalive in flight
	defer stop()
	res := s.ka.renew(ctx, s.lease, clk)
	now := clk.Now()
	switch err := res.err; {
	case err == nil && res.ttl > 0:
		if !s.deadline.Renewed(res.sentAt, time.Duration(res.ttl)*time.Second, now) {
			return false, ErrExpired
		}
		s.notify(Event{KeepAliveLatency: now.Sub(res.sentAt), SentAt: res.sentAt, Deadline: s.deadline.Until()})
		return true, nil
	case err == nil: // the server does not know the lease
		return false, ErrRevoked
	case s.ctx.Err() != nil:
		return false, nil // closing: run sees it next
	default:
		if !s.deadline.Alive(now) {
			return false, ErrExpired
		}
		s.notify(Event{Err: err, Deadline: s.deadline.Until()})
		return false, nil
	}
}
