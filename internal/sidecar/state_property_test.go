package sidecar

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/coordkit/coordkit/fencing"
)

// TestSidecarStateInvariants applies random event sequences, with tokens
// handed out in increasing order as etcd does, and checks what every state
// must satisfy.
func TestSidecarStateInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := NewState("svc", "a", t0)
		next := fencing.Token(1)
		var ownToken fencing.Token
		alive := func() bool { return true }
		n := rapid.IntRange(1, 60).Draw(t, "n")
		for i := 0; i < n; i++ {
			ev := Event{At: t0.Add(time.Duration(i) * time.Second)}
			switch rapid.IntRange(0, 5).Draw(t, "kind") {
			case 0:
				ev.Kind, ev.Alive = SessionUp, alive
			case 1:
				ev.Kind, ev.Reason = SessionDown, "down"
			case 2: // a new leader, someone else
				ev.Kind, ev.Leader, ev.Token = LeaderObserved, "b", next
				next++
			case 3: // a late or repeated observation of an earlier token
				ev.Kind, ev.Leader = LeaderObserved, rapid.SampledFrom([]string{"a", "b"}).Draw(t, "who")
				ev.Token = fencing.Token(rapid.Uint64Range(0, uint64(next-1)).Draw(t, "old"))
			case 4:
				ev.Kind, ev.Token, ev.Alive = Elected, next, alive
				ownToken = next
				next++
			case 5:
				ev.Kind, ev.Reason = Deposed, "resigned"
			}
			before := s
			var c Change
			s, c = s.Apply(ev)
			if s.IsLeader && !(s.HasLeader && s.Leader == "a" && s.Token == ownToken) {
				t.Fatalf("leading but the view says %q/%d (own token %d)", s.Leader, s.Token, ownToken)
			}
			if ok, _ := s.Ready(); ok != s.IsLeader {
				t.Fatalf("Ready %v but IsLeader %v", ok, s.IsLeader)
			}
			if ok, _ := s.Health(); ok && !s.Healthy {
				t.Fatal("healthy probe while unhealthy")
			}
			if c.Won != (!before.IsLeader && s.IsLeader) || c.Lost != (before.IsLeader && !s.IsLeader) {
				t.Fatalf("change %+v does not match %v -> %v", c, before.IsLeader, s.IsLeader)
			}
			if s.IsLeader && ev.Kind == LeaderObserved && ev.Token > ownToken {
				t.Fatal("a newer leader must depose")
			}
			if before.IsLeader && ev.Kind == LeaderObserved && ev.Token <= before.Token && !s.IsLeader {
				t.Fatal("a late observation deposed the leader")
			}
			if before.IsLeader && s.IsLeader && s.Token < before.Token {
				t.Fatal("a leader's token went down")
			}
			if c.LeaderChanged && !s.Since.Equal(ev.At) {
				t.Fatal("since must move with the leader")
			}
		}
	})
}
