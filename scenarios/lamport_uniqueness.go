package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/coordkit/coordkit/claim"
	"github.com/coordkit/coordkit/lamport"
	"github.com/coordkit/coordkit/scenarios/report"
)

// The claims of the scenarios in this file: declared in Scenario.Claims, checked by ID.
const (
	claimLamportTwoOwners  ClaimID = "lamport-two-owners"
	claimOrderKnownLate    ClaimID = "order-known-late"
	claimCASOneWinner      ClaimID = "cas-one-winner"
	claimLoserLearnsWinner ClaimID = "loser-learns-winner"
)

func lamportUniqueness() Scenario {
	return Scenario{
		Name:    "lamport-uniqueness",
		Summary: "Two nodes claim one nickname at once: Lamport timestamps let both say \"yours\"; one etcd compare-and-set picks exactly one winner.",
		Claims: []Claim{
			{ID: claimLamportTwoOwners, Kind: Safety, Text: "with Lamport timestamps, a node must answer before it can know the other's claim: both answer \"yours\""},
			{ID: claimOrderKnownLate, Kind: Safety, Text: "the total order, (5,A) before (5,B), is known only after the timestamps meet"},
			{ID: claimCASOneWinner, Kind: Safety, Text: "the same claims through one etcd compare-and-set: exactly one wins, every time"},
			{ID: claimLoserLearnsWinner, Kind: Safety, Text: "every loser learns the winner in the same request"},
		},
		Run: runLamportUniqueness,
	}
}

// nicknameScript: A and B have each done four things (counter 4); then each
// receives a request for the nickname "alice", stamps it (5,A) and (5,B)
// and tells the other; the messages cross.
const nicknameScript = `A local
A local
A local
A local
B local
B local
B local
B local
A send B
B send A
B recv A
A recv B
`

func runLamportUniqueness(ctx context.Context, env Env) (*report.Report, error) {
	rep := report.New("lamport-uniqueness", "")
	env.Progressf("lamport-uniqueness: two nodes claim \"alice\" with Lamport timestamps")
	lam, err := playLamportClaims()
	if err != nil {
		return nil, err
	}
	lam.judge(rep)
	cas, err := runCASRounds(ctx, env)
	if err != nil {
		return nil, err
	}
	cas.judge(rep)
	rep.Timeline = lam.timeline()
	rep.Note("Lamport order is a total order agreed after the fact; a uniqueness decision needs it before answering. etcd's transaction is serialised by Raft, so the check and the write are one step.")
	return rep, nil
}

// lamportClaimant is one node of part 1.
type lamportClaimant struct {
	claim    lamport.Event
	answered string // what the node told its user when the request came
	learned  int    // index of the event at which it learned the other claim
}

// lamportClaims is part 1: the nickname script played with Lamport clocks.
type lamportClaims struct {
	tr    *lamport.Trace
	nodes map[lamport.NodeID]*lamportClaimant
}

// playLamportClaims plays nicknameScript: each node answers when its
// request comes (as it sends its claim) and learns the other's claim when
// it receives it.
func playLamportClaims() (*lamportClaims, error) {
	tr, err := lamport.ParseTrace(strings.NewReader(nicknameScript))
	if err != nil {
		return nil, err
	}
	nodes := map[lamport.NodeID]*lamportClaimant{}
	for _, e := range tr.Events {
		if e.Op == lamport.OpSend {
			// The node decides now, from what it knows: no earlier claim
			// has reached it, so the name is free as far as it can tell.
			nodes[e.Node] = &lamportClaimant{claim: e, answered: "yours", learned: -1}
		}
	}
	for _, e := range tr.Events {
		if e.Op == lamport.OpRecv {
			nodes[e.Node].learned = e.Index
		}
	}
	return &lamportClaims{tr: tr, nodes: nodes}, nil
}

func (l *lamportClaims) judge(rep *report.Report) {
	tr, nodes := l.tr, l.nodes
	a, b := nodes["A"], nodes["B"]
	winner := "A"
	if b.claim.Timestamp.Less(a.claim.Timestamp) {
		winner = "B"
	}
	rows := [][]string{}
	for _, e := range tr.Events {
		what := ""
		switch {
		case e.Op == lamport.OpSend:
			what = fmt.Sprintf("request \"alice\" at %s; nothing earlier known: answers \"yours\"; tells %s", e.Node, e.Peer)
		case e.Op == lamport.OpRecv:
			other := tr.Events[e.From].Timestamp
			own := nodes[e.Node].claim.Timestamp
			verdict := "mine stands"
			if other.Less(own) {
				verdict = "the other claim was first: my \"yours\" was wrong"
			}
			what = fmt.Sprintf("learns %s claimed at %s; compares with own %s: %s", e.Peer, other, own, verdict)
		default:
			what = "other work"
		}
		rows = append(rows, []string{fmt.Sprint(e.Index + 1), e.Timestamp.String(), e.Step.String(), what})
	}
	rep.AddTable(report.Table{Title: "Claiming \"alice\" with Lamport timestamps", Columns: []string{"#", "Lamport", "event", "what the node knows and does"}, Rows: rows})
	check(rep, claimLamportTwoOwners, "both A and B answer \"yours\": two owners",
		fmt.Sprintf("A answered %q at %s, B answered %q at %s", a.answered, a.claim.Timestamp, b.answered, b.claim.Timestamp),
		a.answered == "yours" && b.answered == "yours")
	firstKnown := min(a.learned, b.learned)
	check(rep, claimOrderKnownLate, "A wins by (5,A) < (5,B) (equal counters, node name breaks the tie), learned only when the timestamps meet",
		fmt.Sprintf("winner %s; first known at event %d, after both answered (events %d and %d)", winner, firstKnown+1, a.claim.Index+1, b.claim.Index+1),
		winner == "A" && a.claim.Timestamp.Counter == 5 && b.claim.Timestamp.Counter == 5 && firstKnown > max(a.claim.Index, b.claim.Index))
}

func (l *lamportClaims) timeline() *report.Timeline {
	return traceTimeline(l.tr, func(e lamport.Event) string {
		switch e.Op {
		case lamport.OpSend:
			return "claims \"alice\" and answers \"yours\""
		case lamport.OpRecv:
			other, own := l.tr.Events[e.From].Timestamp, l.nodes[e.Node].claim.Timestamp
			if other.Less(own) {
				return fmt.Sprintf("learns %s < %s: its \"yours\" was wrong", other, own)
			}
			return fmt.Sprintf("learns %s, after its own %s: it keeps the name", other, own)
		}
		return ""
	})
}

// casRounds is part 2: rounds of concurrent claims through etcd.
type casRounds struct {
	rounds, claimants     int
	oneWinner, loserKnows int
	winsBy                []int
	first                 report.Table // the first five rounds
}

// runCASRounds runs the rounds: in each, every claimant claims the same
// fresh name at once (with a seeded jitter).
func runCASRounds(ctx context.Context, env Env) (*casRounds, error) {
	conn, err := startEtcd(ctx, env, "lamport-uniqueness")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	o := &casRounds{rounds: Pick(env.Scale, 20, 200), claimants: Pick(env.Scale, 2, 5)}
	clis := make([]claim.Client, o.claimants)
	for i := range clis {
		cli, err := conn.Client(ctx)
		if err != nil {
			return nil, err
		}
		clis[i] = cli
	}
	env.Progressf("lamport-uniqueness: %d rounds of %d concurrent claims through etcd", o.rounds, o.claimants)
	rng := rand.New(rand.NewPCG(uint64(env.Seed), 7))
	o.winsBy = make([]int, o.claimants)
	o.first = report.Table{Title: "The first rounds of concurrent claims through etcd", Columns: []string{"name"}}
	for i := 0; i < o.claimants; i++ {
		o.first.Columns = append(o.first.Columns, fmt.Sprintf("claimant %c", 'A'+i))
	}
	for round := 0; round < o.rounds; round++ {
		name := fmt.Sprintf("alice-%d", round)
		// A seeded jitter of up to 200µs so that neither claimant always starts first.
		jitter := make([]time.Duration, o.claimants)
		for i := range jitter {
			jitter[i] = time.Duration(rng.IntN(200)) * time.Microsecond
		}
		results, took, err := casRound(ctx, clis, conn.Prefix, name, jitter)
		if err != nil {
			return nil, err
		}
		o.tally(name, round, results, took)
	}
	return o, nil
}

// casRound has every client claim name at once; claimant i is owner
// 'A'+i and starts after jitter[i].
func casRound(ctx context.Context, clis []claim.Client, prefix, name string, jitter []time.Duration) ([]claim.Result, []time.Duration, error) {
	results := make([]claim.Result, len(clis))
	errs := make([]error, len(clis))
	took := make([]time.Duration, len(clis))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clis {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			time.Sleep(jitter[i])
			owner := string(rune('A' + i))
			call := time.Now()
			results[i], errs[i] = claim.Claim(ctx, clis[i], name, owner, claim.WithPrefix(prefix))
			took[i] = time.Since(call)
		}()
	}
	close(start)
	wg.Wait()
	for i := range errs {
		if errs[i] != nil {
			return nil, nil, fmt.Errorf("claim %s: %w", name, errs[i])
		}
	}
	return results, took, nil
}

// tally counts one round's winners and informed losers.
func (o *casRounds) tally(name string, round int, results []claim.Result, took []time.Duration) {
	won, winnerOwner := 0, ""
	for i, r := range results {
		if r.Won {
			won++
			o.winsBy[i]++
			winnerOwner = r.Owner
		}
	}
	if won == 1 {
		o.oneWinner++
	}
	if round < 5 {
		row := []string{name}
		for i, r := range results {
			what := "taken by " + r.Owner
			if r.Won {
				what = fmt.Sprintf("won, revision %d", r.Revision)
			}
			row = append(row, fmt.Sprintf("%s (%s)", what, took[i].Round(10*time.Microsecond)))
		}
		o.first.Rows = append(o.first.Rows, row)
	}
	for _, r := range results {
		if !r.Won && r.Owner == winnerOwner && !r.Yours {
			o.loserKnows++
		}
	}
}

func (o *casRounds) judge(rep *report.Report) {
	winsDesc := []string{}
	for i, w := range o.winsBy {
		winsDesc = append(winsDesc, fmt.Sprintf("%c won %d", 'A'+i, w))
	}
	rep.Metric("cas_rounds", float64(o.rounds), "")
	rep.Metric("cas_claimants_per_round", float64(o.claimants), "")
	rep.Metric("cas_rounds_with_one_winner", float64(o.oneWinner), "")
	check(rep, claimCASOneWinner, fmt.Sprintf("exactly one winner in each of %d rounds of %d concurrent claims", o.rounds, o.claimants),
		fmt.Sprintf("one winner in %d of %d rounds (%s)", o.oneWinner, o.rounds, strings.Join(winsDesc, ", ")),
		o.oneWinner == o.rounds)
	wantLosers := o.rounds * (o.claimants - 1)
	check(rep, claimLoserLearnsWinner, fmt.Sprintf("%d losing claims, each told the winner's name", wantLosers),
		fmt.Sprintf("%d of %d losers were told the winner", o.loserKnows, wantLosers),
		o.loserKnows == wantLosers)
	rep.AddTable(o.first)
}
