package sidecar

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/session"
)

// A sidecar started while etcd is unreachable (a node that boots before
// etcd does, etcd restarting, a network not up yet) must not exit: in
// Kubernetes an exit is a CrashLoopBackOff whose back-off grows to five
// minutes, so the pod would come back long after etcd did. With
// Config.Connect, Serve makes one attempt before it serves (connected,
// 'ready' means connected as it always did, and an etcd that refuses ends
// it before 'ready'); if etcd cannot be reached, Run keeps trying, serving
// the API meanwhile (/healthz 503 "connecting to etcd: …", no leader known,
// /v1/candidates 503), and campaigns once connected.

// Connect is how Run connects to etcd when Config.Client is nil.
type Connect struct {
	// Dial makes the client: one attempt. Run closes the client when it
	// returns.
	Dial func(ctx context.Context) (*clientv3.Client, error)
	// Transient reports whether an error of Dial may pass by itself (etcd
	// not reachable yet) and is worth another attempt; nil: every error is.
	// Run returns the others at once (etcd answered and refused: a
	// configuration to fix, not an outage to wait out).
	Transient func(error) bool
	// Timeout bounds the whole of connecting; zero: no bound. When it
	// passes, Run returns an error wrapping ErrStartTimeout and the last
	// attempt's error.
	Timeout time.Duration
	// OnRetry is told of each failed attempt, before the wait for the
	// next, instead of Config.Logger; nil: the logger.
	OnRetry func(ConnectRetry)
}

// ConnectRetry is a failed attempt to connect: the Attempt'th, its error,
// and the Wait before the next.
type ConnectRetry struct {
	Attempt int
	Err     error
	Wait    time.Duration
}

func (r ConnectRetry) String() string {
	return fmt.Sprintf("connecting to etcd: attempt %d failed: %v; next attempt in %s", r.Attempt, r.Err, r.Wait.Round(time.Millisecond))
}

// connectBackoff paces the attempts to connect: each wait is drawn with
// full jitter below a cap of 100ms doubling to 5s, so a sidecar connects
// within about 5s (plus one dial) of etcd coming back, however long it
// was away.
func connectBackoff() session.Backoff {
	return session.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second}
}

// connecting is one run of attempts to connect: the attempts so far, the
// backoff, the deadline of Connect.Timeout (from the first attempt), and
// the wait owed before the next attempt. Serve makes the first attempt
// before it listens and Run the rest.
type connecting struct {
	Connect
	clock    session.Clock
	exp      *backoff.ExponentialBackOff
	retry    func(ConnectRetry)
	deadline time.Time // zero: no Timeout
	attempts int
	last     error         // the last attempt that ended by itself, not by the deadline
	owed     time.Duration // the wait before the next attempt
}

// errTimedOut is the cause of an attempt's context when Timeout passes.
var errTimedOut = errors.New("start timeout")

// start returns the attempts' state; clock times the waits between them
// (the deadline is a context's, in real time).
func (c Connect) start(clock session.Clock, b session.Backoff, retry func(ConnectRetry)) *connecting {
	return &connecting{Connect: c, clock: clock, exp: b.Exponential(), retry: retry}
}

// bounded is ctx bounded by the deadline, if any.
func (k *connecting) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if k.deadline.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadlineCause(ctx, k.deadline, errTimedOut)
}

// timedOut is the error of a deadline passed.
func (k *connecting) timedOut() error {
	return fmt.Errorf("%w (%s, %d attempts): %w", ErrStartTimeout, k.Timeout, k.attempts, k.last)
}

// attempt makes one attempt: the client; or the error to end with (not
// transient, the deadline passed, ctx ended); or neither: try again after
// k.owed, told to retry.
func (k *connecting) attempt(ctx context.Context) (*clientv3.Client, error) {
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
	k.retry(ConnectRetry{Attempt: k.attempts, Err: err, Wait: k.owed})
	return nil, nil
}

// run waits what is owed and attempts until one succeeds or attempt
// returns an error.
func (k *connecting) run(ctx context.Context) (*clientv3.Client, error) {
	for {
		if k.attempts > 0 {
			if err := k.wait(ctx); err != nil {
				return nil, err
			}
		}
		if cli, err := k.attempt(ctx); cli != nil || err != nil {
			return cli, err
		}
	}
}

// wait waits what is owed: ctx's error if ctx ends first, the timeout's if
// the deadline passes first.
func (k *connecting) wait(ctx context.Context) error {
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
