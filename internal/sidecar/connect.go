package sidecar

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/session"
)

// A sidecar started while etcd is unreachable (a node that boots before
// etcd does, etcd restarting, a network not up yet) must not exit: in
// Kubernetes an exit is a CrashLoopBackOff whose back-off grows to five
// minutes, so the pod would come back long after etcd did. With
// Config.Connect, Run connects by itself, serving the API meanwhile
// (/healthz 503 "connecting to etcd: …", no leader known), and campaigns
// once connected.

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
	// next; nil: nobody.
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

// ConnectBackoff paces the attempts to connect: each wait is drawn with
// full jitter below a cap of 100ms doubling to 5s, so a sidecar connects
// within about 5s (plus one dial) of etcd coming back, however long it
// was away.
func ConnectBackoff() session.Backoff {
	return session.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second}
}

// errTimedOut is the cause of connect's context when Timeout passes.
var errTimedOut = errors.New("start timeout")

// connect dials until an attempt succeeds, an error is not transient, ctx
// ends (ctx's error) or the timeout passes (ErrStartTimeout). Failed
// attempts that will be retried go to retry; clock times the waits.
func (c Connect) connect(ctx context.Context, clock session.Clock, b session.Backoff, retry func(ConnectRetry)) (*clientv3.Client, error) {
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if c.Timeout > 0 {
		var cancelT context.CancelFunc
		dctx, cancelT = context.WithTimeoutCause(dctx, c.Timeout, errTimedOut)
		defer cancelT()
	}
	exp := b.Exponential()
	var last error // the last attempt that ended by itself, not by dctx
	for attempt := 1; ; attempt++ {
		cli, err := c.Dial(dctx)
		if err == nil {
			return cli, nil
		}
		if dctx.Err() == nil || last == nil {
			last = err
		}
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(context.Cause(dctx), errTimedOut):
			return nil, fmt.Errorf("%w (%s, %d attempts): %w", ErrStartTimeout, c.Timeout, attempt, last)
		case c.Transient != nil && !c.Transient(err):
			return nil, err
		}
		wait := exp.NextBackOff()
		retry(ConnectRetry{Attempt: attempt, Err: err, Wait: wait})
		t := clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-dctx.Done():
			t.Stop()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w (%s, %d attempts): %w", ErrStartTimeout, c.Timeout, attempt, last)
		}
	}
}
