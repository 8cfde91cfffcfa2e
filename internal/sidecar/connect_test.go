package sidecar

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/internal/etcddial"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

var (
	errDown    = errors.New("etcd unreachable (test)")
	errRefused = errors.New("etcd refused the credentials (test)")
)

// A sidecar without a client serves meanwhile: unhealthy with the reason
// "connecting to etcd: …", no leader, no candidates; once an attempt
// succeeds it campaigns and leads on the client it was given, and closes
// it when Run ends.
func TestSidecarConnectsWhenEtcdAnswers(t *testing.T) {
	srv := etcdtest.Start(t)
	open := make(chan struct{})
	retried := make(chan etcddial.Retry, 100)
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
	s, err := New(Config{Connect: etcddial.Connect{Dial: dial, OnRetry: func(r etcddial.Retry) { retried <- r }}, Name: "connect", ID: "a", TTL: 2 * time.Second})
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
	_, err = New(Config{Name: "n", ID: "a", Connect: etcddial.Connect{Dial: dial, Timeout: -time.Second}})
	require.ErrorIs(t, err, ErrBadConfig)
}

// Serve makes the first attempt before it serves: an error Transient
// rejects is Serve's, before 'ready'; etcd unreachable, it serves (and
// says why on /healthz) while Run keeps trying.
func TestServeConnectsFirst(t *testing.T) {
	newSidecar := func(transient bool) *Sidecar {
		dial := func(context.Context) (*clientv3.Client, error) { return nil, errRefused }
		s, err := New(Config{Name: "serve", ID: "a", Connect: etcddial.Connect{Dial: dial, Transient: func(error) bool { return transient }}})
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
