package sidecar

import (
	"context"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/pkg/v3/proxy"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

// runSidecar starts s.Run and returns a function that stops it and
// returns Run's error.
func runSidecar(t *testing.T, s *Sidecar) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	var stopped bool
	var err error
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case err = <-errc:
			case <-time.After(15 * time.Second):
				t.Fatal("Run did not return within 15s of cancel")
			}
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// awaitView waits for a view on ch that satisfies ok.
func awaitView(t *testing.T, ch <-chan View, d time.Duration, ok func(View) bool) View {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case v := <-ch:
			if ok(v) {
				return v
			}
		case <-timeout:
			t.Fatalf("no matching view within %s", d)
		}
	}
}

func isLeader(v View) bool { return v.IsLeader }

// testLogger is a logger into the test's own output, which go test shows
// when the test fails (or with -v).
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// The TTL is 5s, not the 2s of the other tests. With 2s a session's local
// deadline is 1.8s after its last answered keepalive, which a stall of the
// test's etcd under `make test`'s load can pass; a leadership lost that way
// is not resigned, its key goes only with the lease, and the handover this
// test waits 5s for comes later. That is the likeliest reading of its two
// CI failures ("no matching view within 5s" after a.Resign), which no run
// here reproduced; the sidecars' logs are in its output if it fails again.
func TestSidecarRunResignTokenFileMetrics(t *testing.T) {
	_, cli := etcdtest.StartWithClient(t)
	dir := t.TempDir()
	newSidecar := func(id string) (*Sidecar, *prometheus.Registry) {
		reg := prometheus.NewRegistry()
		s, err := New(Config{Client: cli, Name: "svc", ID: id, TTL: 5 * time.Second,
			TokenFile: filepath.Join(dir, id), Registerer: reg, Gatherer: reg, Logger: testLogger(t).With("sidecar", id)})
		require.NoError(t, err)
		return s, reg
	}
	a, regA := newSidecar("a")
	aViews, cancelA := a.Tracker().Subscribe()
	defer cancelA()
	stopA := runSidecar(t, a)
	va := awaitView(t, aViews, 10*time.Second, isLeader)
	require.FileExists(t, filepath.Join(dir, "a"))

	b, _ := newSidecar("b")
	bViews, cancelB := b.Tracker().Subscribe()
	defer cancelB()
	stopB := runSidecar(t, b)
	awaitView(t, bViews, 10*time.Second, func(v View) bool { return v.Token != nil && *v.Token == *va.Token })
	require.Eventually(t, func() bool {
		ok, _ := b.State().Health()
		return ok
	}, 5*time.Second, 5*time.Millisecond, "a standby with a session is healthy")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.ErrorIs(t, b.Resign(ctx, "test"), ErrNotLeader)
	require.NoError(t, a.Resign(ctx, "asked by the test"))
	require.False(t, a.State().IsLeader)
	require.Equal(t, "resigned: asked by the test", a.State().Reason)
	require.NoFileExists(t, filepath.Join(dir, "a"))
	vb := awaitView(t, bViews, 5*time.Second, isLeader)
	require.Greater(t, *vb.Token, *va.Token)
	tok, err := os.ReadFile(filepath.Join(dir, "b"))
	require.NoError(t, err)
	require.Equal(t, vb.Token.String(), strings.TrimSpace(string(tok)))

	values := gatherValues(t, regA)
	require.Equal(t, 0.0, values[MetricIsLeader])
	require.Equal(t, 1.0, values[MetricCampaignSeconds+"_count"])
	require.GreaterOrEqual(t, values[MetricLeaderTransitions], 2.0)
	require.Greater(t, values[MetricLeaseRemainingSecs], 0.0)

	require.NoError(t, stopB())
	require.NoFileExists(t, filepath.Join(dir, "b"))
	awaitView(t, aViews, 5*time.Second, isLeader) // a was queued again
	require.NoError(t, stopA())
	resp, err := cli.Get(context.Background(), "svc/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Empty(t, resp.Kvs, "both resigned and revoked")
}

// TestSidecarRunUnreadyBeforeServerExpiry cuts the leader off from etcd and
// checks that /readyz's answer turns false while the server still holds
// the leader key: no other sidecar can have become leader yet.
func TestSidecarRunUnreadyBeforeServerExpiry(t *testing.T) {
	srv, direct := etcdtest.StartWithClient(t)
	target, err := url.Parse(srv.Endpoints()[0])
	require.NoError(t, err)
	from, err := etcdembed.FreeURL()
	require.NoError(t, err)
	fromURL, err := url.Parse(from)
	require.NoError(t, err)
	px := proxy.NewServer(proxy.ServerConfig{
		Logger: zap.NewNop(),
		From:   url.URL{Scheme: "tcp", Host: fromURL.Host},
		To:     url.URL{Scheme: "tcp", Host: target.Host},
	})
	select {
	case <-px.Ready():
	case err := <-px.Error():
		t.Fatalf("proxy: %v", err)
	}
	defer px.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{fromURL.Host}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	defer cli.Close()

	s, err := New(Config{Client: cli, Name: "svc", ID: "a", TTL: 2 * time.Second})
	require.NoError(t, err)
	views, cancelViews := s.Tracker().Subscribe()
	defer cancelViews()
	stop := runSidecar(t, s)
	v := awaitView(t, views, 10*time.Second, isLeader)
	ready, _ := s.State().Ready()
	require.True(t, ready)

	px.BlackholeTx()
	px.BlackholeRx()
	cut := time.Now()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if ok, _ := s.State().Ready(); !ok {
			break
		}
		require.True(t, time.Now().Before(deadline), "still ready 5s after the cut")
		time.Sleep(5 * time.Millisecond)
	}
	unready := time.Since(cut)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := direct.Get(ctx, "svc/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "the server must still hold the key when the sidecar turns unready")
	require.EqualValues(t, *v.Token, resp.Kvs[0].CreateRevision)
	ttl, err := direct.TimeToLive(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	require.NoError(t, err)
	t.Logf("unready %s after the cut; server lease TTL left %ds", unready, ttl.TTL)
	require.GreaterOrEqual(t, ttl.TTL, int64(0), "-1 would mean the lease expired")
	ok, reason := s.State().Health()
	require.False(t, ok)
	t.Logf("health: %s", reason)

	px.UnblackholeTx()
	px.UnblackholeRx()
	require.NoError(t, stop())
}

func TestSidecarNewValidates(t *testing.T) {
	_, cli := etcdtest.StartWithClient(t)
	cases := []struct {
		name string
		cfg  Config
	}{
		{"no client", Config{Name: "n", ID: "a"}},
		{"no name", Config{Client: cli, ID: "a"}},
		{"no id", Config{Client: cli, Name: "n"}},
		{"short ttl", Config{Client: cli, Name: "n", ID: "a", TTL: time.Millisecond}},
		{"empty command", Config{Client: cli, Name: "n", ID: "a", Command: []string{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			require.ErrorIs(t, err, ErrBadConfig)
		})
	}
}
