package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/metrics"
	"github.com/coordkit/coordkit/session"
)

// etcd is the member this package's tests share; Examples use it too.
var etcd etcdtest.Shared

func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m, &etcd)) }

const waitLimit = 10 * time.Second

// Each loss reason has its label; a revoke's loss, which wraps ErrKeyGone
// too, counts as revoked.
func TestLossReasons(t *testing.T) {
	lost := func(reason error) error { return fmt.Errorf("%w: %w", session.ErrLost, reason) }
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"local deadline", lost(session.ErrExpired), "expired"},
		{"lease revoked", lost(fmt.Errorf("%w: %w", session.ErrRevoked, session.ErrKeyGone)), "revoked"},
		{"key deleted", lost(session.ErrKeyGone), "key_gone"},
		{"session closed", lost(session.ErrClosed), "closed"},
		{"anything else", errors.New("boom"), "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := metrics.New()
			m.Observe(session.Event{Key: "k", Kind: "lock", Lost: true, Err: tc.err})
			m.Observe(session.Event{Lost: true, Err: tc.err}) // the session's own
			want := fmt.Sprintf(`
# HELP coordkit_losses_total Held keys lost while held, by reason.
# TYPE coordkit_losses_total counter
coordkit_losses_total{kind="lock",reason=%[1]q} 1
# HELP coordkit_session_losses_total Sessions lost, by reason.
# TYPE coordkit_session_losses_total counter
coordkit_session_losses_total{reason=%[1]q} 1
`, tc.want)
			require.NoError(t, testutil.CollectAndCompare(m, strings.NewReader(want), "coordkit_losses_total", "coordkit_session_losses_total"))
		})
	}
}

// A real lock (one holder, one waiter) and a real leadership lost to a
// revoke, on etcd, counted by one Collector on a registry of the test's.
func TestCollectorCountsLocksAndElections(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := metrics.New()
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(m))
	events := make(chan session.Event, 100)
	observe := session.WithObserver(func(ev session.Event) {
		m.Observe(ev)
		if ev.Key != "" || ev.KeepAliveLatency > 0 {
			events <- ev
		}
	})
	awaitEvent := func(what string, match func(session.Event) bool) {
		t.Helper()
		for {
			select {
			case ev := <-events:
				if match(ev) {
					return
				}
			case <-time.After(waitLimit):
				t.Fatalf("no event: %s", what)
			}
		}
	}

	newMutex := func() *lock.Mutex {
		mu, err := lock.New(cli, "jobs", lock.WithSessionOptions(observe, session.WithKeepAliveInterval(100*time.Millisecond)))
		require.NoError(t, err)
		t.Cleanup(func() { _ = mu.Close() })
		return mu
	}
	a, b := newMutex(), newMutex()
	ha, err := a.Lock(ctx)
	require.NoError(t, err)
	got := make(chan *lock.Held, 1)
	go func() {
		hb, err := b.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- hb
	}()
	// b waits; a keepalive goes by meanwhile.
	awaitEvent("a keepalive", func(ev session.Event) bool { return ev.KeepAliveLatency > 0 })
	require.NoError(t, ha.Unlock(ctx))
	var hb *lock.Held
	select {
	case hb = <-got:
	case <-time.After(waitLimit):
		t.Fatal("b never got the lock")
	}
	require.NotNil(t, hb)
	require.NoError(t, hb.Unlock(ctx))

	e, err := election.New(cli, "leader", election.WithSessionOptions(observe))
	require.NoError(t, err)
	defer e.Close()
	l, err := e.Campaign(ctx, "me")
	require.NoError(t, err)
	_, err = cli.Revoke(ctx, l.Lease())
	require.NoError(t, err)
	awaitEvent("the leadership's loss", func(ev session.Event) bool { return ev.Lost && ev.Kind == "election" })

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP coordkit_acquisitions_total Keys granted to a holder: locks, semaphore slots, leaderships.
# TYPE coordkit_acquisitions_total counter
coordkit_acquisitions_total{kind="election"} 1
coordkit_acquisitions_total{kind="lock"} 2
# HELP coordkit_losses_total Held keys lost while held, by reason.
# TYPE coordkit_losses_total counter
coordkit_losses_total{kind="election",reason="revoked"} 1
# HELP coordkit_releases_total Held keys given up before any loss.
# TYPE coordkit_releases_total counter
coordkit_releases_total{kind="lock"} 2
`), "coordkit_acquisitions_total", "coordkit_losses_total", "coordkit_releases_total"))

	families, err := reg.Gather()
	require.NoError(t, err)
	histograms := map[string]uint64{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			if h := mt.GetHistogram(); h != nil {
				name := f.GetName()
				for _, lp := range mt.GetLabel() {
					name += "/" + lp.GetValue()
				}
				histograms[name] = h.GetSampleCount()
			}
		}
	}
	require.Equal(t, uint64(2), histograms["coordkit_acquisition_wait_seconds/lock"], "one wait per lock")
	require.Equal(t, uint64(1), histograms["coordkit_acquisition_wait_seconds/election"])
	require.GreaterOrEqual(t, histograms["coordkit_keepalive_latency_seconds"], uint64(1))
}
