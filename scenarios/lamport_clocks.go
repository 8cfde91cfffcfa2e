package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/coordkit/coordkit/lamport"
	"github.com/coordkit/coordkit/scenarios/report"
)

// The claims of the scenarios in this file: declared in Scenario.Claims, checked by ID.
const (
	claimRule1                    ClaimID = "rule-1"
	claimRules2And3               ClaimID = "rules-2-3"
	claimOrderAgreesCausality     ClaimID = "order-agrees-with-causality"
	claimVectorRevealsConcurrency ClaimID = "vector-reveals-concurrency"
)

func lamportClocks() Scenario {
	return Scenario{
		Name:    "lamport-clocks",
		Summary: "The three rules of Lamport clocks traced on (1,A), (2,A) → (3,B); vector clocks expose what the total order hides.",
		Claims: []Claim{
			{ID: claimRule1, Kind: Safety, Text: "rule 1: a node adds one to its counter for each event, so A's events are (1,A) and (2,A)"},
			{ID: claimRules2And3, Kind: Safety, Text: "rule 2: a message carries the sender's counter and rule 3: the receiver takes max(own, received)+1, so B's receive is (3,B)"},
			{ID: claimOrderAgreesCausality, Kind: Safety, Text: "the total order (counter, then node) agrees with causality: if a happened before b, a comes first"},
			{ID: claimVectorRevealsConcurrency, Kind: Safety, Text: "vector clocks reveal a concurrent pair that the Lamport order ranks as if one came first"},
		},
		Run: runLamportClocks,
	}
}

// lamportExample is the textbook example in the form the report prints:
// A does two operations, the second sends to B; B did one local operation
// before the message arrives.
const lamportExample = lamport.ExampleScript

func runLamportClocks(ctx context.Context, env Env) (*report.Report, error) {
	rep := report.New("lamport-clocks", "")
	env.Progressf("lamport-clocks: tracing the example")
	tr, err := lamport.ParseTrace(strings.NewReader(lamportExample))
	if err != nil {
		return nil, fmt.Errorf("example trace: %w", err)
	}

	tbl := report.Table{Title: "The example, event by event", Columns: []string{"#", "event", "counter before", "received", "Lamport", "vector", "rule"}}
	for _, e := range tr.Events {
		recv := ""
		rule := "rule 1: counter+1"
		switch e.Op {
		case lamport.OpSend:
			rule = "rules 1+2: counter+1, sent with the message"
		case lamport.OpRecv:
			recv = fmt.Sprint(e.Received)
			rule = fmt.Sprintf("rule 3: max(%d,%d)+1", e.Prior, e.Received)
		}
		tbl.Rows = append(tbl.Rows, []string{fmt.Sprint(e.Index + 1), e.Step.String(), fmt.Sprint(e.Prior), recv, e.Timestamp.String(), e.Vector.String(), rule})
	}
	rep.AddTable(tbl)

	var aStamps []string
	var bRecv lamport.Event
	for _, e := range tr.Events {
		if e.Node == "A" {
			aStamps = append(aStamps, e.Timestamp.String())
		}
		if e.Node == "B" && e.Op == lamport.OpRecv {
			bRecv = e
		}
	}
	check(rep, claimRule1, "(1,A) (2,A)", strings.Join(aStamps, " "), strings.Join(aStamps, " ") == "(1,A) (2,A)")
	check(rep, claimRules2And3, "(3,B)", fmt.Sprintf("%s (counter before %d, received %d)", bRecv.Timestamp, bRecv.Prior, bRecv.Received),
		bRecv.Timestamp == lamport.Timestamp{Counter: 3, Node: "B"})

	order := make([]string, 0, len(tr.Order))
	for _, i := range tr.Order {
		order = append(order, tr.Events[i].Timestamp.String())
	}
	rep.AddTable(report.Table{Title: "Total (Lamport) order of the example", Columns: []string{"order"}, Rows: [][]string{{strings.Join(order, " < ")}}})

	// Causality agreement, on the example and on random traces from the seed.
	traces := Pick(env.Scale, 50, 500)
	rng := rand.New(rand.NewPCG(uint64(env.Seed), 0x1a3b))
	pairs, violations, concurrentOrdered := 0, 0, 0
	countViolations := func(tr *lamport.Trace) {
		for i := range tr.Events {
			for j := range tr.Events {
				if i == j {
					continue
				}
				switch tr.Relation(i, j) {
				case lamport.Before:
					pairs++
					if !tr.Events[i].Timestamp.Less(tr.Events[j].Timestamp) {
						violations++
					}
				case lamport.Concurrent:
					if i < j {
						concurrentOrdered++
					}
				}
			}
		}
	}
	countViolations(tr)
	for k := 0; k < traces; k++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rt, err := lamport.Simulate(randomSteps(rng, 3, 20))
		if err != nil {
			return nil, fmt.Errorf("random trace: %w", err)
		}
		countViolations(rt)
	}
	rep.Metric("happened_before_pairs", float64(pairs), "")
	rep.Metric("order_violations", float64(violations), "")
	rep.Metric("concurrent_pairs_ranked_anyway", float64(concurrentOrdered), "")
	check(rep, claimOrderAgreesCausality, "every happened-before pair is in Lamport order (0 violations)",
		fmt.Sprintf("%d violations in %d happened-before pairs (the example and %d random traces of 3 nodes)", violations, pairs, traces),
		violations == 0 && pairs > 0)

	// The concurrent pair the Lamport order hides, on the example.
	var hidden []string
	crows := [][]string{}
	for _, p := range tr.Concurrent {
		a, b := tr.Events[p.First], tr.Events[p.Second]
		crows = append(crows, []string{a.Timestamp.String() + " " + a.Step.String(), b.Timestamp.String() + " " + b.Step.String(), a.Vector.String() + " vs " + b.Vector.String()})
		hidden = append(hidden, fmt.Sprintf("%s ∥ %s", a.Timestamp, b.Timestamp))
	}
	rep.AddTable(report.Table{Title: "Concurrent pairs (neither happened before the other) that the total order ranks anyway", Columns: []string{"ranked first", "ranked second", "vectors"}, Rows: crows})
	wantPair := false
	for _, p := range tr.Concurrent {
		a, b := tr.Events[p.First], tr.Events[p.Second]
		if a.Timestamp == (lamport.Timestamp{Counter: 1, Node: "B"}) && b.Timestamp == (lamport.Timestamp{Counter: 2, Node: "A"}) {
			wantPair = true
		}
	}
	check(rep, claimVectorRevealsConcurrency, "(1,B) < (2,A) in Lamport order, yet their vectors are incomparable: concurrent",
		strings.Join(hidden, ", "), wantPair)
	rep.Timeline = traceTimeline(tr, nil)
	rep.Note("Lamport timestamps give one order every node agrees on, but a smaller timestamp does not mean \"happened before\": only vector clocks tell.")
	return rep, nil
}

// randomSteps returns a valid script of n events over nodes: local events,
// sends, and receives of messages in flight.
func randomSteps(rng *rand.Rand, nodes, n int) []lamport.Step {
	names := make([]lamport.NodeID, nodes)
	for i := range names {
		names[i] = lamport.NodeID(string(rune('A' + i)))
	}
	type link struct{ from, to lamport.NodeID }
	inFlight := map[link]int{}
	var links []link
	steps := make([]lamport.Step, 0, n)
	for len(steps) < n {
		node := names[rng.IntN(nodes)]
		switch rng.IntN(3) {
		case 0:
			steps = append(steps, lamport.Step{Node: node, Op: lamport.OpLocal})
		case 1:
			peer := names[rng.IntN(nodes)]
			if peer == node {
				continue
			}
			l := link{node, peer}
			if inFlight[l] == 0 {
				links = append(links, l)
			}
			inFlight[l]++
			steps = append(steps, lamport.Step{Node: node, Op: lamport.OpSend, Peer: peer})
		default:
			if len(links) == 0 {
				continue
			}
			k := rng.IntN(len(links))
			l := links[k]
			inFlight[l]--
			if inFlight[l] == 0 {
				links = append(links[:k], links[k+1:]...)
			}
			steps = append(steps, lamport.Step{Node: l.to, Op: lamport.OpRecv, Peer: l.from})
		}
	}
	return steps
}
