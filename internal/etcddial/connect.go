package etcddial

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/session"
)

// A long-running command started while etcd is unreachable (a node that
// boots before etcd does, etcd restarting, a network not up yet) must not
// exit: in Kubernetes an exit is a CrashLoopBackOff whose back-off grows to
// five minutes, so the pod would come back long after etcd did. The sidecar
// and the agent serve meanwhile (their APIs answer 503, saying why) and
// connect through Connect, attempts paced by ConnectBackoff until one
// succeeds; an etcd that answers and refuses (not Transient) ends them at
// once, a configuration to fix.

// Connect is how a command connects to etcd, retrying while etcd cannot be
// reached.
type Connect struct {
	// Dial makes the client: one attempt.
	Dial func(ctx context.Context) (*clientv3.Client, error)
	// Transient reports whether an error of Dial may pass by itself (etcd
	// not reachable yet) and is worth another attempt; nil: every error is.
	// Attempt and Run return the others at once (etcd answered and
	// refused: a configuration to fix, not an outage to wait out).
	Transient func(error) bool
	// Timeout bounds the whole of connecting, from the first attempt;
	// zero: no bound. When it passes, Run returns an error wrapping
	// ErrStartTimeout and the last attempt's error.
	Timeout time.Duration
	// OnRetry is told of each failed attempt, before the wait for the
	// next (the command says it on stderr).
	OnRetry func(Retry)
}

// ErrStartTimeout is wrapped by the error of a Connecting whose
// Connect.Timeout passed before etcd was reached.
var ErrStartTimeout = errors.New("etcd not reached within the start timeout")

// Retry is a failed attempt to connect: the Attempt'th, its error, and the
// Wait before the next.
type Retry struct {
	Attempt int
	Err     error
	Wait    time.Duration
}

func (r Retry) String() string {
	return fmt.Sprintf("connecting to etcd: attempt %d failed: %v; next attempt in %s", r.Attempt, r.Err, r.Wait.Round(time.Millisecond))
}

// ConnectBackoff paces the attempts to connect: each wait is drawn with
// full jitter below a cap of 100ms doubling to 5s, so a command connects
// within about 5s (plus one dial) of etcd coming back, however long it
// was away.
func ConnectBackoff() session.Backoff {
	return session.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second}
}

// Connecting is one run of attempts to connect: the attempts so far, the
// backoff, the deadline of Connect.Timeout (from the first attempt), and
// the wait owed before the next attempt. Run makes them all; the sidecar
// makes the first itself (Attempt) before it listens, so that an etcd that
// refuses ends it before 'ready', and Run the rest. Not safe for
// concurrent use.
type Connecting struct {
	Connect
	clock    session.Clock
	exp      *backoff.ExponentialBackOff
	deadline time.Time // zero: no Timeout
	attempts int
	last     error         // the last attempt that ended by itself, not by the deadline
	owed     time.Duration // the wait before the next attempt
}

// errTimedOut is the cause of an attempt's context when Timeout passes.
var errTimedOut = errors.New("start timeout")

// Start returns the attempts' state, paced by b (ConnectBackoff for the
// commands); clock times the waits between them (the deadline is a
// context's, in real time).
func (c Connect) Start(clock session.Clock, b session.Backoff) *Connecting {
	return &Connecting{Connect: c, clock: clock, exp: b.Exponential()}
}

// bounded is ctx bounded by the deadline, if any.
func (k *Connecting) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if k.deadline.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadlineCause(ctx, k.deadline, errTimedOut)
}

// timedOut is the error of a deadline passed.
func (k *Connecting) timedOut() error {
	return fmt.Errorf("%w (%s, %d attempts): %w", ErrStartTimeout, k.Timeout, k.attempts, k.last)
}

// Attempt makes one attempt, at once: the client; or the error to end with
// (not transient, the deadline passed, ctx ended); or neither: try again
// after the wait owed (Run waits it), told to OnRetry.
func (k *Connecting) Attempt(ctx context.Context) (*clientv3.Client, error) {
	if k.attempts == 0 && k.Timeout > 0 {
		k.deadline = time.Now().Add(k.Timeout)
	}
	dctx, cancel := k.bounded(ctx)
	defer cancel()
	k.attempts++
	cli, err := k.Dial(dctx)
	if err == nil {
		return cli, nil
	}
	if dctx.Err() == nil || k.last == nil {
		k.last = err
	}
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(context.Cause(dctx), errTimedOut):
		return nil, k.timedOut()
	case k.Transient != nil && !k.Transient(err):
		return nil, err
	}
	k.owed = k.exp.NextBackOff()
	if k.OnRetry != nil {
		k.OnRetry(Retry{Attempt: k.attempts, Err: err, Wait: k.owed})
	}
	return nil, nil
}

// Run waits what is owed and attempts until one succeeds or Attempt
// returns an error.
func (k *Connecting) Run(ctx context.Context) (*clientv3.Client, error) {
	for {
		if k.attempts > 0 {
			if err := k.wait(ctx); err != nil {
				return nil, err
			}
		}
		if cli, err := k.Attempt(ctx); cli != nil || err != nil {
			return cli, err
		}
	}
}

// wait waits what is owed: ctx's error if ctx ends first, the timeout's if
// the deadline passes first.
func (k *Connecting) wait(ctx context.Context) error {
	dctx, cancel := k.bounded(ctx)
	defer cancel()
	t := k.clock.NewTimer(k.owed)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-dctx.Done():
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return k.timedOut()
}

// Transient reports whether an error of Dial is worth another attempt:
// etcd not reached, or reached and silent (starting, no quorum yet). Not
// those of an etcd that answered and refused (TLS, credentials, another
// cluster) nor TLS files that do not load: a configuration to fix, which
// a command reports at once (and shows as a crash loop), not by waiting
// for ever.
func Transient(err error) bool {
	return !errors.Is(err, ErrTLS) && !errors.Is(err, ErrAuth) && !errors.Is(err, ErrClusterMismatch) && !errors.Is(err, ErrTLSConfig)
}
