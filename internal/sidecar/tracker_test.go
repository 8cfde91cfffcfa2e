package sidecar

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// fixedClock stops the time the tracker stamps; its timers are real (the
// tracker sets none).
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

func (fixedClock) NewTimer(d time.Duration) session.Timer { return session.RealClock{}.NewTimer(d) }

func recv(t *testing.T, ch <-chan View) View {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("no view")
		return View{}
	}
}

func TestSidecarTrackerSubscribe(t *testing.T) {
	tr := NewTracker("svc", "svc/", "a", fixedClock{t0})
	views, cancel := tr.Subscribe()
	defer cancel()
	first := recv(t, views)
	require.Nil(t, first.Leader)
	require.Equal(t, t0, first.Since)

	tr.Apply(Event{Kind: SessionUp}) // invisible
	tr.Apply(Event{Kind: LeaderObserved, Leader: "b", Token: 4})
	v := recv(t, views)
	require.Equal(t, "b", *v.Leader)
	require.Equal(t, fencing.Token(4), *v.Token)
	require.False(t, v.IsLeader)

	tr.Apply(Event{Kind: Elected, Token: 8})
	v = recv(t, views)
	require.True(t, v.IsLeader)
	require.Equal(t, "a", *v.Leader)
	select {
	case v := <-views:
		t.Fatalf("unexpected view %+v", v)
	default:
	}
}

func TestSidecarTrackerSlowWatcherKeepsLatest(t *testing.T) {
	tr := NewTracker("svc", "svc/", "a", fixedClock{t0})
	views, cancel := tr.Subscribe()
	defer cancel()
	for i := 1; i <= 3*subscriberBuffer; i++ {
		tr.Apply(Event{Kind: LeaderObserved, Leader: "b", Token: fencing.Token(i)})
	}
	var last View
	for len(views) > 0 {
		last = <-views
	}
	require.Equal(t, fencing.Token(3*subscriberBuffer), *last.Token)
	cancel()
	tr.Apply(Event{Kind: LeaderObserved, Leader: "c", Token: 1000})
	require.Empty(t, views, "no views after cancel")
}
