package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// RunConfig is what Run does with a leadership: the callbacks and
// ReleaseOnCancel of client-go's LeaderElectionConfig, over an Election
// (docs/migrating-client-go.md compares them field by field).
type RunConfig struct {
	// Value is what the candidate proclaims (its identity or address).
	Value string
	// OnStartedLeading runs in its own goroutine when this candidate wins.
	// ctx is cancelled when the leadership ends, and its cause says why:
	// an error wrapping session.ErrLost and the reason when it was lost
	// (Leadership.Err), ErrResigned for a Resign request, a hand-over or
	// Election.Close, or the cause of Run's ctx when that ended. It must
	// return then: Run waits for it. Returning earlier does not resign.
	OnStartedLeading func(ctx context.Context, l *Leadership)
	// OnStoppedLeading is called once, as Run returns, whether this
	// candidate led or not (client-go defers it the same way): after
	// OnStartedLeading has returned, the leadership was given up, and the
	// last OnNewLeader or OnNoLeader call has returned.
	OnStoppedLeading func()
	// OnNewLeader is called, from one goroutine of its own, with each
	// leader Run observes while it runs, ours included: first the current
	// one, then each change of leader key, token or value.
	OnNewLeader func(value string, token fencing.Token)
	// OnNoLeader is called, from the same goroutine as OnNewLeader, when
	// Run observes that no candidate leads (at the start, or once the last
	// candidate left).
	OnNoLeader func()
	// OnCampaignError, if set, is told of each failed campaign and how long
	// Run waits before the next one.
	OnCampaignError func(err error, retryIn time.Duration)
	// ReleaseOnCancel resigns when Run's ctx ends, once OnStartedLeading
	// has returned. Without it the key is left to expire with the lease
	// (keepalives stop), as client-go's LeaderElector does. With
	// WithSession the session is the caller's: it is left running, and the
	// key with it.
	ReleaseOnCancel bool
	// Backoff paces campaigns after errors.
	Backoff session.Backoff
	// Resign, if set: a receive while leading makes this candidate resign
	// (after OnStartedLeading returned) and Run return an error wrapping
	// ErrResigned. Receives while not leading are ignored.
	//
	// Under a preemptive policy Run also steps down, the same way, when
	// the Leadership's Yield closes: it hands over by ResignTo(Best), or
	// resigns if that fails.
	Resign <-chan struct{}
}

// Run campaigns until this candidate leads, leads until the leadership
// ends, and returns, as client-go's LeaderElector.Run does. It returns nil
// when ctx ended (while campaigning or while leading); otherwise an error
// wrapping why the leadership ended, the cause OnStartedLeading's ctx had:
// session.ErrLost and the reason, or ErrResigned. To campaign again, call
// Run again:
//
//	for ctx.Err() == nil {
//		err := election.Run(ctx, e, cfg)
//		if !errors.Is(err, session.ErrLost) && !errors.Is(err, election.ErrResigned) {
//			return err
//		}
//	}
//
// Each campaign uses a fresh session (unless the Election has
// WithSession). Failed campaigns are retried with cfg.Backoff. Run returns
// session.ErrClosed when the Election was closed, and
// session.ErrGoneWhileWaiting when the WithSession session has ended
// (nothing can campaign on it again).
//
// No goroutine it starts outlives it, provided OnStartedLeading returns
// when its ctx is cancelled.
func Run(ctx context.Context, e *Election, cfg RunConfig) error {
	if cfg.OnStoppedLeading != nil {
		defer cfg.OnStoppedLeading()
	}
	if cfg.OnNewLeader != nil || cfg.OnNoLeader != nil {
		octx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			observeLoop(octx, e, cfg)
		}()
		defer func() { cancel(); <-done }()
	}
	campaign := func() (*Leadership, error) {
		l, err := e.Campaign(ctx, cfg.Value)
		if err != nil && (errors.Is(err, session.ErrClosed) || e.cfg.Session != nil && e.cfg.Session.Err() != nil) {
			return nil, backoff.Permanent(err)
		}
		return l, err
	}
	retry := []backoff.RetryOption{backoff.WithBackOff(cfg.Backoff.Exponential()), backoff.WithMaxElapsedTime(0)}
	if cfg.OnCampaignError != nil {
		retry = append(retry, backoff.WithNotify(cfg.OnCampaignError))
	}
	l, err := backoff.Retry(ctx, campaign, retry...)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	cause, ctxEnded := lead(ctx, e, l, cfg)
	if ctxEnded {
		return nil
	}
	return fmt.Errorf("election: leadership of %q ended: %w", e.name, cause)
}

// errYielded is the cause of a leadership Run handed over because the
// policy prefers another candidate (Leadership.Yield).
var errYielded = fmt.Errorf("%w: the policy prefers another candidate", ErrResigned)

// lead runs one leadership to its end and gives it up. It returns why it
// ended, and whether that was Run's ctx.
func lead(ctx context.Context, e *Election, l *Leadership, cfg RunConfig) (cause error, ctxEnded bool) {
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// A loss cancels the callback's ctx at once, from the goroutine that
	// saw it, with the same cause as below.
	stop := context.AfterFunc(l.Context(), func() { cancel(context.Cause(l.Context())) })
	defer stop()

	e.acting.begin(l)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		defer e.acting.done(l)
		if cfg.OnStartedLeading != nil {
			cfg.OnStartedLeading(lctx, l)
		}
	}()

	resign := cfg.Resign
	var resigning, yielding bool
	for cause == nil {
		select {
		case <-l.Context().Done(): // lost, or resigned by another caller (Close)
			cause = context.Cause(l.Context()) // Leadership.Err
		case <-ctx.Done():
			cause, ctxEnded = context.Cause(ctx), true
		case _, ok := <-resign:
			if !ok {
				resign = nil // a closed channel asks nothing
				continue
			}
			cause, resigning = ErrResigned, true
		case <-l.Yield():
			cause, yielding = errYielded, true
		case <-returned:
			returned = nil // keep leading until something ends it
		}
	}
	e.acting.ended(l)
	cancel(cause)
	if returned != nil {
		<-returned
	}
	switch {
	case yielding:
		yieldLeadership(ctx, l)
	case resigning:
		rctx, rcancel := context.WithTimeout(ctx, cleanupTimeout)
		_ = l.Resign(rctx)
		rcancel()
	case ctxEnded && cfg.ReleaseOnCancel:
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		_ = l.Resign(rctx)
		rcancel()
	default:
		// Ended with ctx (the key is left to expire with the lease), or
		// lost: stop the session's keepalives, if it is ours.
		l.orphan()
	}
	return cause, ctxEnded
}

// observeLoop feeds OnNewLeader and OnNoLeader, observing again after
// errors.
func observeLoop(ctx context.Context, e *Election, cfg RunConfig) {
	bo := cfg.Backoff.Exponential()
	// Observing ends only in an error (or with ctx); each observation
	// starts the backoff over.
	_, _ = backoff.Retry(ctx, func() (struct{}, error) {
		for obs := range e.Observe(ctx) {
			if obs.Err != nil {
				return struct{}{}, obs.Err
			}
			bo.Reset()
			switch {
			case obs.Leader != nil && cfg.OnNewLeader != nil:
				cfg.OnNewLeader(obs.Leader.Value, obs.Leader.Token)
			case obs.Leader == nil && cfg.OnNoLeader != nil:
				cfg.OnNoLeader()
			}
		}
		return struct{}{}, errObserveEnded
	}, backoff.WithBackOff(bo), backoff.WithMaxElapsedTime(0))
}

// errObserveEnded: an Observe channel closed without an error; observe again.
var errObserveEnded = errors.New("election: observe ended")
