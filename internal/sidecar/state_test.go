package sidecar

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func TestSidecarStateTransitions(t *testing.T) {
	alive := func() bool { return true }
	type step struct {
		ev   Event
		want func(t *testing.T, s State, c Change)
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"session up makes healthy, not ready", []step{
			{Event{Kind: SessionUp, At: at(1), Alive: alive}, func(t *testing.T, s State, c Change) {
				require.True(t, s.Healthy)
				require.True(t, c.HealthChanged)
				require.False(t, c.Visible())
				ok, _ := s.Ready()
				require.False(t, ok)
				ok, _ = s.Health()
				require.True(t, ok)
			}},
		}},
		{"observed leader then none", []step{
			{Event{Kind: SessionUp, At: at(1), Alive: alive}, nil},
			{Event{Kind: LeaderObserved, At: at(2), Leader: "b", Token: 7}, func(t *testing.T, s State, c Change) {
				require.True(t, c.LeaderChanged)
				require.True(t, s.HasLeader)
				require.Equal(t, "b", s.Leader)
				require.Equal(t, fencing.Token(7), s.Token)
				require.Equal(t, at(2), s.Since)
				_, reason := s.Ready()
				require.Contains(t, reason, "the leader is b, token 7")
			}},
			{Event{Kind: LeaderObserved, At: at(3), Leader: "b", Token: 7}, func(t *testing.T, s State, c Change) {
				require.False(t, c.LeaderChanged, "same leader again is no change")
				require.Equal(t, at(2), s.Since)
			}},
			{Event{Kind: LeaderObserved, At: at(4)}, func(t *testing.T, s State, c Change) {
				require.True(t, c.LeaderChanged)
				require.False(t, s.HasLeader)
				require.Equal(t, at(4), s.Since)
			}},
		}},
		{"elected then resigned", []step{
			{Event{Kind: SessionUp, At: at(1), Alive: alive}, nil},
			{Event{Kind: Elected, At: at(2), Token: 9, Alive: alive}, func(t *testing.T, s State, c Change) {
				require.True(t, c.Won)
				require.True(t, c.LeaderChanged)
				require.True(t, s.IsLeader)
				require.Equal(t, "a", s.Leader)
				ok, _ := s.Ready()
				require.True(t, ok)
			}},
			{Event{Kind: LeaderObserved, At: at(3), Leader: "a", Token: 9}, func(t *testing.T, s State, c Change) {
				require.Equal(t, Change{}, c, "own observation changes nothing")
			}},
			{Event{Kind: Deposed, At: at(4), Reason: "resigned"}, func(t *testing.T, s State, c Change) {
				require.True(t, c.Lost)
				require.True(t, c.LeaderChanged, "a deposed leader forgets itself")
				require.False(t, s.IsLeader)
				require.False(t, s.HasLeader)
				require.Equal(t, "resigned", s.Reason)
			}},
			{Event{Kind: Deposed, At: at(5)}, func(t *testing.T, s State, c Change) {
				require.Equal(t, Change{}, c, "deposing a non-leader is a no-op")
			}},
		}},
		{"late observations do not depose", []step{
			{Event{Kind: Elected, At: at(2), Token: 9, Alive: alive}, nil},
			{Event{Kind: LeaderObserved, At: at(3), Leader: "b", Token: 5}, func(t *testing.T, s State, c Change) {
				require.True(t, s.IsLeader)
				require.Equal(t, Change{}, c)
			}},
			{Event{Kind: LeaderObserved, At: at(3)}, func(t *testing.T, s State, c Change) {
				require.True(t, s.IsLeader, "a late 'no leader' is ignored")
			}},
		}},
		{"a higher token deposes", []step{
			{Event{Kind: Elected, At: at(2), Token: 9, Alive: alive}, nil},
			{Event{Kind: LeaderObserved, At: at(3), Leader: "b", Token: 12}, func(t *testing.T, s State, c Change) {
				require.False(t, s.IsLeader)
				require.True(t, c.Lost)
				require.True(t, c.LeaderChanged)
				require.Equal(t, "b", s.Leader)
				require.Equal(t, fencing.Token(12), s.Token)
			}},
		}},
		{"session loss deposes and is unhealthy", []step{
			{Event{Kind: SessionUp, At: at(1), Alive: alive}, nil},
			{Event{Kind: Elected, At: at(2), Token: 9, Alive: alive}, nil},
			{Event{Kind: SessionDown, At: at(3), Reason: "lease expired"}, func(t *testing.T, s State, c Change) {
				require.True(t, c.Lost)
				require.True(t, c.HealthChanged)
				ok, reason := s.Health()
				require.False(t, ok)
				require.Equal(t, "lease expired", reason)
				ok, _ = s.Ready()
				require.False(t, ok)
			}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewState("svc", "a", t0)
			for i, st := range tc.steps {
				var c Change
				s, c = s.Apply(st.ev)
				if st.want != nil {
					t.Logf("step %d: %s", i, st.ev.Kind)
					st.want(t, s, c)
				}
			}
		})
	}
}

func TestSidecarStateReadyAsksTheDeadline(t *testing.T) {
	alive := true
	s := NewState("svc", "a", t0)
	s, _ = s.Apply(Event{Kind: SessionUp, At: at(1), Alive: func() bool { return alive }})
	s, _ = s.Apply(Event{Kind: Elected, At: at(1), Token: 3, Alive: func() bool { return alive }})
	ok, _ := s.Ready()
	require.True(t, ok)
	alive = false // the local deadline passed; no event yet
	ok, reason := s.Ready()
	require.False(t, ok)
	require.Contains(t, reason, "deadline")
	ok, _ = s.Health()
	require.False(t, ok)
}

func TestSidecarStateInitial(t *testing.T) {
	s := NewState("svc", "a", t0)
	ok, reason := s.Health()
	require.False(t, ok)
	require.Equal(t, "connecting to etcd", reason)
	v := s.View()
	require.Nil(t, v.Leader)
	require.Nil(t, v.Token)
}

// Issue 32: an --id with a newline and quotes printed forged "leader id=…"
// lines in text mode (JSON and /metrics escape it).
func TestOutputLinesQuoteIDs(t *testing.T) {
	evil := "x token=1\nleader id=evil"
	tok := fencing.Token(5)
	for _, line := range []fmt.Stringer{ElectedLine{ID: evil, Token: tok}, LostLine{ID: evil}, LeaderLine{Leader: &evil, Token: &tok}} {
		require.NotContains(t, line.String(), "\n", "%T", line)
		require.Contains(t, line.String(), `id="x token=1\nleader id=evil"`, "%T", line)
	}
}

// A standby that learns that no leader is known (etcd silent past the
// leader's TTL) shows none; a leader ignores it (its session decides).
func TestLeaderUnknown(t *testing.T) {
	t0 := time.Unix(100, 0)
	s := NewState("svc", "a", t0)
	s, _ = s.Apply(Event{Kind: LeaderObserved, Leader: "b", Token: 7, At: t0})
	s, c := s.Apply(Event{Kind: LeaderUnknown, Reason: "etcd silent", At: t0.Add(3 * time.Second)})
	require.True(t, c.LeaderChanged)
	require.False(t, s.HasLeader)
	require.Nil(t, s.View().Leader)
	ready, _ := s.Ready()
	require.False(t, ready)

	s, _ = s.Apply(Event{Kind: Elected, Token: 9, At: t0.Add(4 * time.Second)})
	s, c = s.Apply(Event{Kind: LeaderUnknown, At: t0.Add(5 * time.Second)})
	require.False(t, c.LeaderChanged)
	require.True(t, s.IsLeader)
}
