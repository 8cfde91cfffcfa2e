package etcddial

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/session"
)

var (
	errDown    = errors.New("etcd unreachable (test)")
	errRefused = errors.New("etcd refused the credentials (test)")
)

// fastBackoff keeps the connect tests' waits short; the order and the
// counts are what they check.
var fastBackoff = session.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}

// Connecting retries what Transient accepts, reporting each failed attempt
// once and in order, and returns the first client; it returns at once an
// error Transient rejects, and ctx's error when ctx ends.
func TestConnectRetriesTransientErrors(t *testing.T) {
	ctx := context.Background()
	want := &clientv3.Client{}
	fails := 3
	dial := func(context.Context) (*clientv3.Client, error) {
		if fails > 0 {
			fails--
			return nil, errDown
		}
		return want, nil
	}
	var retries []Retry
	c := Connect{Dial: dial, Transient: func(err error) bool { return errors.Is(err, errDown) },
		OnRetry: func(r Retry) { retries = append(retries, r) }}
	cli, err := c.Start(session.RealClock{}, fastBackoff).Run(ctx)
	require.NoError(t, err)
	require.Same(t, want, cli)
	require.Len(t, retries, 3)
	for i, r := range retries {
		require.Equal(t, i+1, r.Attempt)
		require.ErrorIs(t, r.Err, errDown)
		require.LessOrEqual(t, r.Wait, 2*time.Millisecond, "below the backoff's cap")
	}
	require.Contains(t, retries[1].String(), "connecting to etcd: attempt 2 failed: etcd unreachable (test); next attempt in")

	attempts := 0
	c.Dial = func(context.Context) (*clientv3.Client, error) { attempts++; return nil, errRefused }
	c.OnRetry = func(Retry) { t.Error("a rejected error is not retried") }
	_, err = c.Start(session.RealClock{}, fastBackoff).Run(ctx)
	require.ErrorIs(t, err, errRefused)
	require.Equal(t, 1, attempts)

	cctx, cancel := context.WithCancel(ctx)
	c.Dial = func(context.Context) (*clientv3.Client, error) { return nil, errDown }
	c.OnRetry = func(r Retry) {
		if r.Attempt == 5 {
			cancel()
		}
	}
	_, err = c.Start(session.RealClock{}, fastBackoff).Run(cctx)
	require.ErrorIs(t, err, context.Canceled)
}

// With a Timeout, connecting ends with ErrStartTimeout and the last
// attempt's own error, not the deadline's, whether the deadline cut an
// attempt (a dial that hangs) or a wait.
func TestConnectStartTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		dial func(context.Context) (*clientv3.Client, error)
	}{
		{"fast failures", func(context.Context) (*clientv3.Client, error) { return nil, errDown }},
		{"a dial that hangs after one failure", func() func(context.Context) (*clientv3.Client, error) {
			n := 0
			return func(ctx context.Context) (*clientv3.Client, error) {
				if n++; n == 1 {
					return nil, errDown
				}
				<-ctx.Done()
				return nil, ctx.Err()
			}
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Connect{Dial: tc.dial, Timeout: 100 * time.Millisecond}
			start := time.Now()
			_, err := c.Start(session.RealClock{}, ConnectBackoff()).Run(context.Background())
			require.ErrorIs(t, err, ErrStartTimeout)
			require.ErrorIs(t, err, errDown)
			require.NotErrorIs(t, err, context.DeadlineExceeded)
			require.ErrorContains(t, err, "(100ms, ")
			require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "not before the timeout")
		})
	}
}

// Transient: an etcd that could not be reached is worth another attempt;
// one that answered and refused (TLS, credentials, another cluster) or TLS
// files that do not load are a configuration to fix.
func TestTransient(t *testing.T) {
	require.True(t, Transient(fmt.Errorf("%w at 127.0.0.1:1: connection refused", ErrUnreachable)))
	require.True(t, Transient(context.DeadlineExceeded))
	for _, e := range []error{ErrTLS, ErrAuth, ErrClusterMismatch, ErrTLSConfig} {
		require.False(t, Transient(fmt.Errorf("wrapped: %w", e)), "%v", e)
	}
}
