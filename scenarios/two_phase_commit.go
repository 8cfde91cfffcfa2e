package scenarios

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/scenarios/report"
)

// The claims of the scenarios in this file: declared in Scenario.Claims, checked by ID.
const (
	claimParticipantsBlock  ClaimID = "participants-block"
	claimBlockedHoldLocks   ClaimID = "blocked-hold-locks"
	claimConsensusCompletes ClaimID = "consensus-completes"
	claimDecidesOnce        ClaimID = "decides-once"
)

func twoPhaseCommit() Scenario {
	return Scenario{
		Name:    "two-phase-commit",
		Summary: "2PC with three participants: the coordinator crashes after collecting \"yes\" votes and the participants stay blocked, holding their locks, until it returns; with the decision recorded through consensus they finish with one node lost.",
		Claims: []Claim{
			{ID: claimParticipantsBlock, Kind: Safety, Text: "after voting yes a participant cannot decide alone: all three stay blocked until the coordinator returns"},
			{ID: claimBlockedHoldLocks, Kind: Safety, Text: "blocked participants hold their locks: another transaction on the same rows cannot proceed"},
			{ID: claimConsensusCompletes, Kind: Safety, Text: "with the decision recorded through consensus, the participants complete without the coordinator, with one cluster node lost"},
			{ID: claimDecidesOnce, Kind: Safety, Text: "the consensus record decides once: a later attempt to record abort does not change the commit"},
		},
		Run: runTwoPhaseCommit,
	}
}

// participant is a resource manager of 2PC: voting yes takes its row lock,
// which it holds until it learns the decision.
type participant struct {
	name     string
	lock     chan struct{} // capacity 1: the row lock
	decision chan string   // the coordinator's message
}

func newParticipant(name string) *participant {
	return &participant{name: name, lock: make(chan struct{}, 1), decision: make(chan string, 1)}
}

type outcome2PC struct {
	name      string
	decision  string
	preparedT time.Time
	doneT     time.Time
}

func runTwoPhaseCommit(ctx context.Context, env Env) (*report.Report, error) {
	rep := report.New("two-phase-commit", "")
	rec := report.NewRecorder(nil)
	downtime := Pick(env.Scale, 1500*time.Millisecond, 5*time.Second)
	ask := 250 * time.Millisecond

	// Part 1: classic 2PC, the coordinator the only one who knows.
	env.Progressf("two-phase-commit: classic 2PC, coordinator down for %s after the votes", downtime)
	ps := []*participant{newParticipant("P1"), newParticipant("P2"), newParticipant("P3")}
	rec.State("coordinator", report.StateActive)
	var coordMu sync.Mutex
	coordUp := true
	coordDecision := ""
	askCoordinator := func() (string, bool) {
		coordMu.Lock()
		defer coordMu.Unlock()
		return coordDecision, coordUp
	}
	votes := make(chan string, len(ps))
	results := make(chan outcome2PC, len(ps))
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.lock <- struct{}{} // take the row lock for the transaction
			rec.State(p.name, report.StateHolder)
			out := outcome2PC{name: p.name, preparedT: time.Now()}
			votes <- p.name
			t := time.NewTicker(ask)
			defer t.Stop()
			for out.decision == "" {
				select {
				case d := <-p.decision:
					out.decision = d
				case <-t.C:
					// Ask the coordinator; the other participants know no more.
					call := time.Now()
					d, up := askCoordinator()
					switch {
					case !up:
						rec.Op(p.name, "ask coordinator for the decision: no answer", call, time.Now(), report.OutcomeFail)
					case d != "":
						out.decision = d
						rec.Op(p.name, "ask coordinator: "+d, call, time.Now(), report.OutcomeOK)
					}
				case <-ctx.Done():
					return
				}
			}
			out.doneT = time.Now()
			<-p.lock
			rec.State(p.name, report.StateIdle)
			results <- out
		}()
	}
	for range ps {
		select {
		case <-votes:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	rec.Mark("coordinator", "all three voted yes; decides commit")
	// The coordinator crashes after collecting the votes, before it sends
	// (or durably logs) the decision.
	coordMu.Lock()
	coordUp = false
	coordMu.Unlock()
	crashAt := time.Now()
	rec.State("coordinator", report.StateDown)
	rec.FaultStart("coordinator crashed")

	// Meanwhile another transaction wants P1's row.
	sleepCtx(ctx, downtime/3)
	t2call := time.Now()
	t2wait := downtime / 3
	t2Blocked := false
	select {
	case ps[0].lock <- struct{}{}:
		<-ps[0].lock
	case <-time.After(t2wait):
		t2Blocked = true
	}
	outcomeT2 := report.OutcomeOK
	descT2 := "T2 locks P1's row"
	if t2Blocked {
		outcomeT2, descT2 = report.OutcomeFail, fmt.Sprintf("T2 wants P1's row: still locked after %s", t2wait)
	}
	rec.Op("T2", descT2, t2call, time.Now(), outcomeT2)

	sleepCtx(ctx, downtime-time.Since(crashAt))
	// The coordinator returns; with no decision logged it presumes abort,
	// which is safe: nobody can have committed without hearing from it.
	coordMu.Lock()
	coordUp, coordDecision = true, "abort"
	coordMu.Unlock()
	back := time.Now()
	rec.FaultEnd("coordinator crashed")
	rec.State("coordinator", report.StateActive)
	rec.Mark("coordinator", "back: no decision in its log, presumes abort and tells everyone")
	for _, p := range ps {
		p.decision <- "abort"
	}
	wg.Wait()
	close(results)
	var blocked []string
	allWaited := true
	var sorted []outcome2PC
	for r := range results {
		sorted = append(sorted, r)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	for _, r := range sorted {
		waited := r.doneT.Sub(crashAt)
		blocked = append(blocked, fmt.Sprintf("%s blocked %s, then %s", r.name, waited.Round(time.Millisecond), r.decision))
		allWaited = allWaited && !r.doneT.Before(back)
		rep.Metric("classic_blocked_ms_"+r.name, ms(waited), "ms")
	}
	rec.State("coordinator", report.StateIdle)
	check(rep, claimParticipantsBlock, fmt.Sprintf("each stays prepared for the whole outage (%s), asking and getting no answer", downtime),
		strings.Join(blocked, ", "), allWaited && len(blocked) == 3)
	check(rep, claimBlockedHoldLocks, fmt.Sprintf("T2 cannot lock P1's row during the outage (waits %s)", t2wait.Round(time.Millisecond)),
		descT2, t2Blocked)

	// Part 2: the decision goes through consensus.
	env.Progressf("two-phase-commit: the decision recorded in a 3-node lab cluster")
	c, err := startLab(ctx, env, labConfig(env, 3))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	leader, err := waitLeader(ctx, c, 5*time.Second)
	if err != nil {
		return nil, err
	}
	coord := c.NewClient(0)
	labOp := func(who, desc string, r cluster.Result, err error) {
		o := report.OutcomeOK
		if err != nil {
			o = report.OutcomeFail
			desc += ": " + shortErr(err)
		}
		rec.Op(who, desc, time.Now().Add(-r.Latency), time.Now(), o)
	}
	const key = "txn/T3"
	r, err := coord.Put(ctx, key, "pending")
	labOp("coordinator", "record T3 pending", r, err)
	if err != nil {
		return nil, fmt.Errorf("record pending: %w", err)
	}
	rec.State("coordinator", report.StateActive)
	ps2 := []*participant{newParticipant("P1"), newParticipant("P2"), newParticipant("P3")}
	for _, p := range ps2 {
		p.lock <- struct{}{}
		rec.State(p.name, report.StateHolder)
	}
	rec.Mark("coordinator", "T3: all three voted yes")
	r, err = coord.CAS(ctx, key, "pending", "commit")
	labOp("coordinator", "record T3 commit (CAS pending→commit)", r, err)
	if err != nil || !r.Swapped {
		return nil, fmt.Errorf("record commit: swapped=%v err=%v", r.Swapped, err)
	}
	// The coordinator crashes before telling anyone, and so does the lab's leader.
	crash2 := time.Now()
	rec.State("coordinator", report.StateDown)
	rec.FaultStart("coordinator crashed (T3)")
	if err := c.Crash(leader); err != nil {
		return nil, err
	}
	rec.FaultStart(fmt.Sprintf("lab node n%d (the leader) crashed", leader))
	rec.Mark("", fmt.Sprintf("lab node n%d lost: 2 of 3 remain", leader))

	var wg2 sync.WaitGroup
	type done2 struct {
		name     string
		decision string
		took     time.Duration
		err      error
	}
	dones := make(chan done2, len(ps2))
	for _, p := range ps2 {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			cl := c.NewClient(0)
			deadline := time.Now().Add(10 * time.Second)
			for {
				sleepCtx(ctx, 50*time.Millisecond)
				r, err := cl.Get(ctx, key, cluster.ReadIndex)
				if err == nil && r.Value != "pending" {
					labOp(p.name, "read T3's decision: "+r.Value, r, nil)
					<-p.lock
					rec.State(p.name, report.StateIdle)
					dones <- done2{p.name, r.Value, time.Since(crash2), nil}
					return
				}
				if err != nil {
					labOp(p.name, "read T3's decision", r, err)
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					dones <- done2{p.name, "", time.Since(crash2), fmt.Errorf("no decision: %v", err)}
					return
				}
			}
		}()
	}
	wg2.Wait()
	close(dones)
	var finished []string
	allCommitted := true
	var slowest time.Duration
	var doneList []done2
	for d := range dones {
		doneList = append(doneList, d)
	}
	sort.Slice(doneList, func(i, j int) bool { return doneList[i].name < doneList[j].name })
	for _, d := range doneList {
		if d.err != nil {
			finished = append(finished, fmt.Sprintf("%s: %v", d.name, d.err))
			allCommitted = false
			continue
		}
		finished = append(finished, fmt.Sprintf("%s %s after %s", d.name, d.decision, d.took.Round(time.Millisecond)))
		allCommitted = allCommitted && d.decision == "commit"
		slowest = max(slowest, d.took)
		rep.Metric("consensus_done_ms_"+d.name, ms(d.took), "ms")
	}
	check(rep, claimConsensusCompletes, fmt.Sprintf("all three read commit and release their locks while the coordinator is still down, well within its %s outage", downtime),
		strings.Join(finished, ", "), allCommitted && slowest < downtime)

	// A participant that had given up waiting would try to record abort.
	nowLeader, _ := c.Leader()
	late := c.NewClient(nowLeader)
	r, err = late.CAS(ctx, key, "pending", "abort")
	labOp("P3", "record T3 abort (CAS pending→abort)", r, err)
	final, ferr := late.Get(ctx, key, cluster.ReadIndex)
	check(rep, claimDecidesOnce, "CAS pending→abort does not swap; the record stays commit",
		fmt.Sprintf("swapped=%v (%s); record is %s", r.Swapped, errText(err), readValue(final, ferr)),
		err == nil && !r.Swapped && ferr == nil && final.Value == "commit")
	sleepCtx(ctx, 50*time.Millisecond)
	rec.FaultEnd("coordinator crashed (T3)")
	rec.FaultEnd(fmt.Sprintf("lab node n%d (the leader) crashed", leader))
	rep.Metric("coordinator_downtime_ms", ms(downtime), "ms")
	rep.AddTable(report.Table{
		Title:   "Who knows the decision when the coordinator is down",
		Columns: []string{"protocol", "decision kept by", "after the crash", "participants"},
		Rows: [][]string{
			{"classic 2PC", "the coordinator alone", "nobody can learn it", fmt.Sprintf("blocked %s, locks held", downtime)},
			{"decision through consensus", "a replicated record (3 lab nodes, one lost)", "any participant reads it", fmt.Sprintf("done in %s", slowest.Round(time.Millisecond))},
		},
	})
	rep.Note("In classic 2PC a prepared participant has promised to commit if told to and may not abort on its own; only the coordinator knows whether it decided. Recording the decision (or the abort of a participant that gave up) with one compare-and-set in a consensus group makes it available to everyone as long as a majority of that group is up: this is the idea of Paxos Commit.")
	rep.Note("The classic coordinator here crashed before logging its decision, so on its return it presumes abort; had it logged commit, the participants would have committed on its return. Either way they wait for it.")
	rep.Timeline = rec.Timeline()
	return rep, nil
}
