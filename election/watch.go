package election

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/session"
)

// WatchKind is what a WatchEvent reports.
type WatchKind int

const (
	// WatchLeader: the leader changed; Leader is nil when there is none.
	WatchLeader WatchKind = iota
	// WatchUnknown: no leader is known. etcd has not answered for longer
	// than the lease TTL of the leader last shown, so it may be gone;
	// Reason says so.
	WatchUnknown
	// WatchDown: etcd stopped answering (Err); the leader shown may be gone.
	WatchDown
	// WatchUp: etcd answers again after WatchDown.
	WatchUp
	// WatchRetry: observing failed (Err) and starts again.
	WatchRetry
)

// WatchEvent is one event of Watch.
type WatchEvent struct {
	Kind   WatchKind
	Leader *Leader // WatchLeader
	Err    error   // WatchDown, WatchRetry
	Reason string  // WatchUnknown
}

// WatchConfig configures Watch.
type WatchConfig struct {
	// OnEvent receives the events in order (required). An error from it
	// ends Watch with that error.
	OnEvent func(WatchEvent) error
	// ProbeEvery is how often Watch asks etcd whether it answers (default
	// 1s): a watch stays silent through an outage.
	ProbeEvery time.Duration
	// RequestTimeout bounds each probe and lease request (default 5s).
	RequestTimeout time.Duration
	// RetryAfter is the pause before observing again after a failure
	// (default 200ms): a failing etcd is not asked in a tight loop.
	RetryAfter time.Duration
	// Clock is the source of time (default session.RealClock).
	Clock session.Clock
}

// Validate reports a config Watch cannot run: no OnEvent, or a negative
// duration.
func (c WatchConfig) Validate() error {
	if c.OnEvent == nil {
		return errors.New("election: watch needs OnEvent")
	}
	if c.ProbeEvery < 0 || c.RequestTimeout < 0 || c.RetryAfter < 0 {
		return fmt.Errorf("election: watch: negative duration in %+v", c)
	}
	return nil
}

func (c WatchConfig) withDefaults() WatchConfig {
	if c.ProbeEvery == 0 {
		c.ProbeEvery = time.Second
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 5 * time.Second
	}
	if c.RetryAfter == 0 {
		c.RetryAfter = 200 * time.Millisecond
	}
	if c.Clock == nil {
		c.Clock = session.RealClock{}
	}
	return c
}

// Watch reports the leader on every change, as Observe does, until ctx ends
// (nil) — and tells an outage from a quiet election: a probe asks etcd
// every ProbeEvery whether it answers (requiring a leader); when it stops
// answering Watch reports WatchDown, and the instant the shown leader's
// lease must have expired (no answer for longer than its granted TTL, or
// the election's TTL when that is not known; a timer, not a probe's own
// timeout) WatchUnknown; when etcd answers
// again, WatchUp, and it observes afresh. A failed observation is
// WatchRetry, observed again after RetryAfter. It returns the error of
// OnEvent, or the session.ErrNameInUse of a name that is a semaphore's or
// a read-write lock's.
func (e *Election) Watch(ctx context.Context, cfg WatchConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	w := &watcher{e: e, cfg: cfg, st: outage{lastOK: cfg.Clock.Now(), defaultTTL: e.cfg.OwnTTL()}}
	return w.run(ctx)
}

type watcher struct {
	e   *Election
	cfg WatchConfig
	st  outage
}

type probeResult struct {
	sent time.Time
	err  error
}

func (w *watcher) run(ctx context.Context) error {
	probe := w.cfg.Clock.NewTimer(w.cfg.ProbeEvery)
	defer func() { probe.Stop() }()
	// due fires when "no leader known" is due (outage.unknownAt); a
	// stopped timer whose channel never fires when nothing is due.
	var due session.Timer
	var dueC <-chan time.Time
	rearm := func() {
		if due != nil {
			due.Stop()
		}
		dueC = nil
		if at, ok := w.st.unknownAt(); ok {
			due = w.cfg.Clock.NewTimer(max(at.Sub(w.cfg.Clock.Now()), 0) + time.Millisecond)
			dueC = due.C()
		}
	}
	defer func() {
		if due != nil {
			due.Stop()
		}
	}()
	ttls := make(chan leaseTTLOf, 1)
	var wg sync.WaitGroup
	reqCtx, cancelReqs := context.WithCancel(ctx)
	defer func() {
		cancelReqs()
		go func() { wg.Wait(); close(ttls) }()
		for range ttls { // the lease requests end with ctx's cancellation
		}
	}()
	probed := make(chan probeResult, 1)
	probing := false
	defer func() {
		if probing {
			<-probed
		}
	}()
	for ctx.Err() == nil {
		octx, stop := context.WithCancel(ctx)
		obs := w.e.Observe(octx)
		restart := false
		var err error
		for !restart && err == nil && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case o, ok := <-obs:
				switch {
				case !ok:
					restart = true
				case errors.Is(o.Err, session.ErrNameInUse):
					err = o.Err
				case o.Err != nil:
					if ctx.Err() == nil {
						err = w.cfg.OnEvent(WatchEvent{Kind: WatchRetry, Err: o.Err})
					}
					restart = true
				default:
					err = w.cfg.OnEvent(WatchEvent{Kind: WatchLeader, Leader: o.Leader})
					// The lease's TTL is asked aside: etcd may stop
					// answering right now, and the decision must not
					// wait for that request's timeout.
					w.st.leader(o.Leader, 0)
					rearm()
					if o.Leader != nil {
						wg.Add(1)
						go func(l *Leader) { defer wg.Done(); ttls <- leaseTTLOf{l, w.leaseTTL(reqCtx, l)} }(o.Leader)
					}
				}
			case t := <-ttls:
				if t.leader == w.st.shown {
					w.st.leaseTTL = t.ttl
					rearm()
				}
			case <-dueC:
				dueC = nil
				for _, ev := range w.st.silentPast(w.cfg.Clock.Now()) {
					if err == nil {
						err = w.cfg.OnEvent(ev)
					}
				}
				rearm()
			case <-probe.C():
				probe = w.cfg.Clock.NewTimer(w.cfg.ProbeEvery)
				if !probing {
					probing = true
					go func() { probed <- w.probe(ctx) }()
				}
			case r := <-probed:
				probing = false
				var evs []WatchEvent
				evs, restart = w.st.probed(r.sent, r.err, w.cfg.Clock.Now())
				for _, ev := range evs {
					if err == nil {
						err = w.cfg.OnEvent(ev)
					}
				}
				rearm()
			}
		}
		stop()
		for range obs { // the observer goroutine ends with octx
		}
		if err != nil {
			return err
		}
		if restart && ctx.Err() == nil {
			t := w.cfg.Clock.NewTimer(w.cfg.RetryAfter)
			select {
			case <-ctx.Done():
			case <-t.C():
			}
			t.Stop()
		}
	}
	return nil
}

// leaseTTLOf is the answer of leaseTTL for the leader shown then.
type leaseTTLOf struct {
	leader *Leader
	ttl    time.Duration
}

// leaseTTL is the granted TTL of l's lease, 0 when unknown.
func (w *watcher) leaseTTL(ctx context.Context, l *Leader) time.Duration {
	if l == nil {
		return 0
	}
	cctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	if resp, err := w.e.client.TimeToLive(cctx, l.Lease); err == nil && resp.GrantedTTL > 0 {
		return time.Duration(resp.GrantedTTL) * time.Second
	}
	return 0
}

// probe asks etcd for one key count, requiring a leader.
func (w *watcher) probe(ctx context.Context) probeResult {
	sent := w.cfg.Clock.Now()
	cctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), w.cfg.RequestTimeout)
	defer cancel()
	_, err := w.e.client.Get(cctx, "coordkit-probe", clientv3.WithCountOnly())
	return probeResult{sent: sent, err: err}
}

// outage is what Watch knows about etcd's answers and the leader shown: the
// decision when "no leader known" is due. Pure: times are inputs.
type outage struct {
	shown      *Leader
	leaseTTL   time.Duration // the shown leader's granted TTL; 0 unknown
	defaultTTL time.Duration // assumed when leaseTTL is unknown
	lastOK     time.Time     // send time of the last answered probe
	down       bool
	unknown    bool // WatchUnknown reported since etcd last answered
}

// leader notes the leader just shown and its lease's TTL (0: unknown).
func (o *outage) leader(l *Leader, ttl time.Duration) {
	o.shown, o.leaseTTL, o.unknown = l, ttl, false
}

// probed takes a probe sent at sent that failed with err (nil: answered),
// at now. restart reports that etcd answers again after WatchUnknown, so
// the leader must be read afresh.
func (o *outage) probed(sent time.Time, err error, now time.Time) (evs []WatchEvent, restart bool) {
	if err == nil {
		o.lastOK = sent
		if o.down {
			o.down = false
			evs = append(evs, WatchEvent{Kind: WatchUp})
		}
		return evs, o.unknown
	}
	if !o.down {
		o.down = true
		evs = append(evs, WatchEvent{Kind: WatchDown, Err: err})
	}
	return append(evs, o.silentPast(now)...), false
}

func (o *outage) ttl() time.Duration {
	if o.leaseTTL == 0 {
		return o.defaultTTL
	}
	return o.leaseTTL
}

// unknownAt is when "no leader known" is due if etcd does not answer
// meanwhile: the shown leader's TTL after the last answer (ok false when
// no leader is shown or it was said already).
func (o *outage) unknownAt() (at time.Time, ok bool) {
	if o.shown == nil || o.unknown {
		return time.Time{}, false
	}
	return o.lastOK.Add(o.ttl()), true
}

// silentPast is the decision at now, with or without a probe's answer:
// once etcd has been silent for longer than the shown leader's TTL, the
// leader may be gone — WatchDown (if not said) and WatchUnknown, at that
// instant, not when a probe's own timeout ends.
func (o *outage) silentPast(now time.Time) (evs []WatchEvent) {
	silent := now.Sub(o.lastOK)
	if o.shown == nil || o.unknown || silent <= o.ttl() {
		return nil
	}
	if !o.down {
		o.down = true
		evs = append(evs, WatchEvent{Kind: WatchDown, Err: fmt.Errorf("no answer for %s", silent.Round(time.Millisecond))})
	}
	o.unknown = true
	return append(evs, WatchEvent{Kind: WatchUnknown, Reason: fmt.Sprintf(
		"etcd has not answered for %s, longer than the lease TTL %s of the last leader %s (token %d)",
		silent.Round(100*time.Millisecond), o.ttl(), o.shown.Value, o.shown.Token)})
}
