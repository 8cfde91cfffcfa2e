package election

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// RunConfig is what Run does with the leadership.
type RunConfig struct {
	// Value is what the candidate proclaims (its identity or address).
	Value string
	// OnStartedLeading runs in its own goroutine when this candidate wins.
	// ctx is cancelled on loss, on a Resign request, and when Run's ctx
	// ends; it must return then. Returning earlier does not resign.
	OnStartedLeading func(ctx context.Context, l *Leadership)
	// OnStoppedLeading is called after OnStartedLeading has returned, each
	// time a leadership ends.
	OnStoppedLeading func()
	// OnNewLeader is called, from its own goroutine, with each leader this
	// candidate observes, ours included, and with ("", 0) when there is
	// none.
	OnNewLeader func(value string, token fencing.Token)
	// OnCampaignError, if set, is told of each failed campaign and how long
	// Run waits before the next one.
	OnCampaignError func(err error, retryIn time.Duration)
	// ReleaseOnCancel resigns when Run's ctx ends, once OnStartedLeading
	// has returned. Without it the key is left to expire with the lease
	// (keepalives stop), as client-go's LeaderElector does. With
	// WithSession the session is the caller's: it is left running, and the
	// key with it.
	ReleaseOnCancel bool
	// Backoff paces campaigns after errors (exponential, full jitter: the
	// type keepalive-stream reconnects use too).
	Backoff session.Backoff
	// Resign, if set: each receive while leading makes this candidate
	// resign (after OnStartedLeading returned) and campaign again, at the
	// back of the line. Receives while not leading are ignored.
	//
	// Under a preemptive policy Run also hands over, the same way, when the
	// Leadership's Yield closes: by ResignTo(Best), or by Resign if that
	// fails.
	Resign <-chan struct{}
}

// Run campaigns, leads and campaigns again, in the manner of client-go's
// LeaderElector, until ctx ends; then it returns nil. Each campaign uses a
// fresh session (unless the Election has WithSession). Failed campaigns are
// retried with cfg.Backoff. It returns session.ErrClosed when the Election was
// closed, and session.ErrGoneWhileWaiting when the WithSession session has ended
// (nothing can campaign on it again).
//
// No goroutine it starts outlives it, provided OnStartedLeading returns
// when its ctx is cancelled.
func Run(ctx context.Context, e *Election, cfg RunConfig) error {
	if cfg.OnNewLeader != nil {
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
	for {
		// Retry starts each streak of failed campaigns from the first cap.
		l, err := backoff.Retry(ctx, campaign, retry...)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if stop := lead(ctx, l, cfg); stop {
			return nil
		}
	}
}

// lead runs one leadership to its end. It returns true when Run must stop.
func lead(ctx context.Context, l *Leadership, cfg RunConfig) bool {
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(l.Context(), func() { cancel(context.Cause(l.Context())) })
	defer stop()

	returned := make(chan struct{})
	go func() {
		defer close(returned)
		if cfg.OnStartedLeading != nil {
			cfg.OnStartedLeading(lctx, l)
		}
	}()

	resign := cfg.Resign
	var why int
	const (
		lost = iota + 1
		ended
		resigning
		yielding
	)
	for why == 0 {
		select {
		case <-l.Context().Done(): // lost, or resigned by another caller (Close)
			why = lost
		case <-ctx.Done():
			why = ended
		case _, ok := <-resign:
			if !ok {
				resign = nil // a closed channel asks nothing
				continue
			}
			why = resigning
		case <-l.Yield():
			why = yielding
		case <-returned:
			returned = nil // keep leading until something ends it
		}
	}
	cancel(ErrResigned)
	if returned != nil {
		<-returned
	}
	switch why {
	case yielding:
		yieldLeadership(ctx, l)
	case resigning:
		rctx, rcancel := context.WithTimeout(ctx, cleanupTimeout)
		_ = l.Resign(rctx)
		rcancel()
	case ended:
		if cfg.ReleaseOnCancel {
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			_ = l.Resign(rctx)
			rcancel()
		} else {
			l.orphan()
		}
	case lost:
		l.orphan() // stop the dead session's keepalives, if any
	}
	if cfg.OnStoppedLeading != nil {
		cfg.OnStoppedLeading()
	}
	return why == ended
}

// observeLoop feeds OnNewLeader, observing again after errors.
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
			if obs.Leader == nil {
				cfg.OnNewLeader("", 0)
			} else {
				cfg.OnNewLeader(obs.Leader.Value, obs.Leader.Token)
			}
		}
		return struct{}{}, errObserveEnded
	}, backoff.WithBackOff(bo), backoff.WithMaxElapsedTime(0))
}

// errObserveEnded: an Observe channel closed without an error; observe again.
var errObserveEnded = errors.New("election: observe ended")
