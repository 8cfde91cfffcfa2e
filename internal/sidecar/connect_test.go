package sidecar

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/session"
)

var (
	errDown    = errors.New("etcd unreachable (test)")
	errRefused = errors.New("etcd refused the credentials (test)")
)

// fastBackoff keeps the connect tests' waits short; the order and the
// counts are what they check.
var fastBackoff = session.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}

// connect retries what Transient accepts, reporting each failed attempt
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
	var retries []ConnectRetry
	c := Connect{Dial: dial, Transient: func(err error) bool { return errors.Is(err, errDown) }}
	cli, err := c.start(session.RealClock{}, fastBackoff, func(r ConnectRetry) { retries = append(retries, r) }).run(ctx)
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
	_, err = c.start(session.RealClock{}, fastBackoff, func(ConnectRetry) { t.Error("a rejected error is not retried") }).run(ctx)
	require.ErrorIs(t, err, errRefused)
	require.Equal(t, 1, attempts)

	cctx, cancel := context.WithCancel(ctx)
	c.Dial = func(context.Context) (*clientv3.Client, error) { return nil, errDown }
	_, err = c.start(session.RealClock{}, fastBackoff, func(r ConnectRetry) {
		if r.Attempt == 5 {
			cancel()
		}
	}).run(cctx)
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
			_, err := c.start(session.RealClock{}, connectBackoff(), func(ConnectRetry) {}).run(context.Background())
			require.ErrorIs(t, err, ErrStartTimeout)
			require.ErrorIs(t, err, errDown)
			require.NotErrorIs(t, err, context.DeadlineExceeded)
			require.ErrorContains(t, err, "(100ms, ")
			require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "not before the timeout")
		})
	}
}

// A sidecar without a client serves meanwhile: unhealthy with the reason
// "connecting to etcd: …", no leader, no candidates; once an attempt
// succeeds it campaigns and leads on the client it was given, and closes
// it when Run ends.
func TestSidecarConnectsWhenEtcdAnswers(t *testing.T) {
	srv := etcdtest.Start(t)
	open := make(chan struct{})
	retried := make(chan ConnectRetry, 100)
	var dialed *clientv3.Client
	dial := func(ctx context.Context) (*clientv3.Client, error) {
		select {
		case <-open:
		default:
			return nil, errDown
		}
		var err error
		dialed, err = clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second,
			Context: context.WithoutCancel(ctx), Logger: zap.NewNop()})
		return dialed, err
	}
	s, err := New(Config{Connect: Connect{Dial: dial, OnRetry: func(r ConnectRetry) { retried <- r }}, Name: "connect", ID: "a", TTL: 2 * time.Second})
	require.NoError(t, err)
	views, cancel := s.Tracker().Subscribe()
	defer cancel()
	stop := runSidecar(t, s)

	for range 2 {
		select {
		case <-retried:
		case <-time.After(10 * time.Second):
			t.Fatal("no failed attempt reported")
		}
	}
	ok, reason := s.State().Health()
	require.False(t, ok)
	require.Equal(t, "connecting to etcd: "+errDown.Error(), reason)
	require.False(t, s.State().HasLeader)
	_, err = s.Candidates(context.Background())
	require.ErrorIs(t, err, ErrConnecting)

	close(open)
	v := awaitView(t, views, 20*time.Second, isLeader)
	require.Equal(t, "a", *v.Leader)
	ok, _ = s.State().Health()
	require.True(t, ok)
	require.NoError(t, stop())
	require.ErrorIs(t, dialed.Ctx().Err(), context.Canceled, "Run closed the client it connected")
}

// New wants a client or a way to connect, and no negative timeout.
func TestNewWantsAClientOrConnect(t *testing.T) {
	_, err := New(Config{Name: "n", ID: "a"})
	require.ErrorIs(t, err, ErrBadConfig)
	dial := func(context.Context) (*clientv3.Client, error) { return nil, errDown }
	_, err = New(Config{Name: "n", ID: "a", Connect: Connect{Dial: dial, Timeout: -time.Second}})
	require.ErrorIs(t, err, ErrBadConfig)
}

// Serve makes the first attempt before it serves: an error Transient
// rejects is Serve's, before 'ready'; etcd unreachable, it serves (and
// says why on /healthz) while Run keeps trying.
func TestServeConnectsFirst(t *testing.T) {
	newSidecar := func(transient bool) *Sidecar {
		dial := func(context.Context) (*clientv3.Client, error) { return nil, errRefused }
		s, err := New(Config{Name: "serve", ID: "a", Connect: Connect{Dial: dial, Transient: func(error) bool { return transient }}})
		require.NoError(t, err)
		return s
	}
	err := Serve(context.Background(), newSidecar(false), "127.0.0.1:0", func(string) error {
		t.Error("listening before a refusing etcd was reported")
		return nil
	})
	require.ErrorIs(t, err, errRefused)

	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, newSidecar(true), "127.0.0.1:0", func(u string) error { urls <- u; return nil })
	}()
	var url string
	select {
	case url = <-urls:
	case err := <-served:
		t.Fatalf("Serve returned before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("not listening within 10s")
	}
	code, body := get(t, url+"/healthz")
	require.Equal(t, 503, code)
	require.Contains(t, body, "connecting to etcd: "+errRefused.Error())
	code, _ = get(t, url+"/livez")
	require.Equal(t, 200, code)
	cancel()
	require.NoError(t, <-served, "ended by ctx while connecting")
}
