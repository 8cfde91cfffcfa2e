package lamport

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// genHistory draws a random valid message history: every receive has a
// message in flight on its link.
func genHistory(t *rapid.T) []Step {
	nodes := []NodeID{"A", "B", "C", "D", "E"}[:rapid.IntRange(1, 5).Draw(t, "nodes")]
	n := rapid.IntRange(0, 40).Draw(t, "steps")
	inFlight := map[[2]NodeID]int{}
	var steps []Step
	for i := range n {
		node := rapid.SampledFrom(nodes).Draw(t, fmt.Sprintf("node%d", i))
		var senders []NodeID
		for _, p := range nodes {
			if inFlight[[2]NodeID{p, node}] > 0 {
				senders = append(senders, p)
			}
		}
		s := Step{Line: i + 1, Node: node, Op: OpLocal}
		switch op := rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("op%d", i)); {
		case op == 1 && len(nodes) > 1:
			var peers []NodeID
			for _, p := range nodes {
				if p != node {
					peers = append(peers, p)
				}
			}
			s.Op, s.Peer = OpSend, rapid.SampledFrom(peers).Draw(t, fmt.Sprintf("to%d", i))
			inFlight[[2]NodeID{node, s.Peer}]++
		case op == 2 && len(senders) > 0:
			s.Op, s.Peer = OpRecv, rapid.SampledFrom(senders).Draw(t, fmt.Sprintf("from%d", i))
			inFlight[[2]NodeID{s.Peer, node}]--
		}
		steps = append(steps, s)
	}
	return steps
}

// bruteHappensBefore computes happens-before from the steps alone, without
// any clock: the transitive closure of program order and send→receive, with
// FIFO delivery per link. hb[i][j] means event i happened before event j.
func bruteHappensBefore(steps []Step) [][]bool {
	n := len(steps)
	hb := make([][]bool, n)
	for i := range hb {
		hb[i] = make([]bool, n)
	}
	last := map[NodeID]int{}
	queues := map[[2]NodeID][]int{}
	addEdge := func(from, to int) {
		hb[from][to] = true
		for k := range n { // everything before from is before to
			if hb[k][from] {
				hb[k][to] = true
			}
		}
	}
	for j, s := range steps {
		if p, ok := last[s.Node]; ok {
			addEdge(p, j)
		}
		last[s.Node] = j
		switch s.Op {
		case OpSend:
			l := [2]NodeID{s.Node, s.Peer}
			queues[l] = append(queues[l], j)
		case OpRecv:
			l := [2]NodeID{s.Peer, s.Node}
			addEdge(queues[l][0], j)
			queues[l] = queues[l][1:]
		}
	}
	return hb
}

func TestLamportPropertyClocksAgreeWithHappensBefore(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		steps := genHistory(t)
		tr, err := Simulate(steps)
		if err != nil {
			t.Fatalf("valid history rejected: %v", err)
		}
		hb := bruteHappensBefore(steps)
		ev := tr.Events
		concurrent := map[Pair]bool{}
		stamps := map[Timestamp]bool{}
		for i := range ev {
			if stamps[ev[i].Timestamp] {
				t.Fatalf("timestamp %v issued twice", ev[i].Timestamp)
			}
			stamps[ev[i].Timestamp] = true
			for j := range ev {
				if i == j {
					continue
				}
				got := ev[i].Vector.Compare(ev[j].Vector)
				switch {
				case hb[i][j]:
					// Clock condition: a → b implies L(a) < L(b).
					if !ev[i].Timestamp.Less(ev[j].Timestamp) {
						t.Fatalf("%v → %v but Lamport %v ≥ %v", steps[i], steps[j], ev[i].Timestamp, ev[j].Timestamp)
					}
					if got != Before {
						t.Fatalf("%v → %v but vectors %v %v compare %v", steps[i], steps[j], ev[i].Vector, ev[j].Vector, got)
					}
				case hb[j][i]:
					if got != After {
						t.Fatalf("%v → %v but vectors %v %v compare %v", steps[j], steps[i], ev[j].Vector, ev[i].Vector, got)
					}
				default:
					if got != Concurrent {
						t.Fatalf("%v ∥ %v but vectors %v %v compare %v", steps[i], steps[j], ev[i].Vector, ev[j].Vector, got)
					}
					if ev[i].Timestamp.Less(ev[j].Timestamp) {
						concurrent[Pair{i, j}] = true
					}
				}
			}
		}
		// The trace lists exactly the concurrent pairs, oriented by Lamport order.
		if len(tr.Concurrent) != len(concurrent) {
			t.Fatalf("trace lists %d concurrent pairs, brute force finds %d", len(tr.Concurrent), len(concurrent))
		}
		for k, p := range tr.Concurrent {
			if !concurrent[p] {
				t.Fatalf("pair %v listed as concurrent but is not (or is misoriented)", p)
			}
			if k > 0 {
				prev := tr.Concurrent[k-1]
				c := ev[prev.First].Timestamp.Compare(ev[p.First].Timestamp)
				if c > 0 || c == 0 && !ev[prev.Second].Timestamp.Less(ev[p.Second].Timestamp) {
					t.Fatalf("concurrent pairs not sorted: %v then %v", prev, p)
				}
			}
		}
		// Order is a permutation sorted by timestamp.
		if len(tr.Order) != len(ev) {
			t.Fatalf("order has %d events, want %d", len(tr.Order), len(ev))
		}
		seen := map[int]bool{}
		for k, i := range tr.Order {
			seen[i] = true
			if k > 0 && !ev[tr.Order[k-1]].Timestamp.Less(ev[i].Timestamp) {
				t.Fatalf("order not increasing at %d", k)
			}
		}
		if len(seen) != len(ev) {
			t.Fatalf("order is not a permutation")
		}
	})
}

func TestLamportPropertyReceiveExceedsBoth(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var c Clock
		for range rapid.IntRange(0, 20).Draw(t, "ticks") {
			c.Tick()
		}
		before := c.Time()
		msg := Time(rapid.Uint64Range(0, 1<<40).Draw(t, "msg"))
		got := c.Receive(msg)
		if got != max(before, msg)+1 || c.Time() != got {
			t.Fatalf("Receive(%d) at %d = %d, want %d", msg, before, got, max(before, msg)+1)
		}
	})
}

func TestLamportPropertyVectorMergeIsLeastUpperBound(t *testing.T) {
	gen := rapid.Custom(func(t *rapid.T) Vector {
		return NewVector(rapid.MapOf(rapid.SampledFrom([]NodeID{"A", "B", "C"}), rapid.Custom(func(t *rapid.T) Time {
			return Time(rapid.Uint64Range(0, 5).Draw(t, "c"))
		})).Draw(t, "m"))
	})
	rapid.Check(t, func(t *rapid.T) {
		a, b := gen.Draw(t, "a"), gen.Draw(t, "b")
		m := a.Merge(b)
		if o := a.Compare(m); o != Before && o != Equal {
			t.Fatalf("%v vs merge %v: %v", a, m, o)
		}
		if o := b.Compare(m); o != Before && o != Equal {
			t.Fatalf("%v vs merge %v: %v", b, m, o)
		}
		if m.Compare(b.Merge(a)) != Equal {
			t.Fatalf("merge not commutative")
		}
		if a.Compare(b) == Concurrent && (m.Compare(a) != After || m.Compare(b) != After) {
			t.Fatalf("merge of concurrent %v %v = %v not after both", a, b, m)
		}
	})
}
