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

// twoPCRun is the state of one run of two-phase-commit.
type twoPCRun struct {
	env      Env
	rep      *report.Report
	rec      *report.Recorder
	downtime time.Duration // how long the coordinator stays down
	ask      time.Duration // how often a blocked participant asks it
}

// classicObs is what part 1 (classic 2PC) observed.
type classicObs struct {
	crashAt, back time.Time
	outcomes      []outcome2PC // sorted by name
	t2Wait        time.Duration
	t2Blocked     bool
	t2Desc        string
}

// consensusObs is what part 2 (the decision through consensus) observed.
type consensusObs struct {
	dones       []consensusDone // sorted by name
	lateSwapped bool
	lateErr     error
	final       cluster.Result
	finalErr    error
	leader      cluster.NodeID
}

type consensusDone struct {
	name     string
	decision string
	took     time.Duration
	err      error
}

func runTwoPhaseCommit(ctx context.Context, env Env) (*report.Report, error) {
	r := &twoPCRun{env: env, rep: report.New("two-phase-commit", ""), rec: report.NewRecorder(nil),
		downtime: Pick(env.Scale, 1500*time.Millisecond, 5*time.Second), ask: 250 * time.Millisecond}
	classic, err := r.actClassic(ctx)
	if err != nil {
		return nil, err
	}
	r.judgeClassic(classic)
	cons, err := r.actConsensus(ctx)
	if err != nil {
		return nil, err
	}
	r.judgeConsensus(cons)
	r.rep.Timeline = r.rec.Timeline()
	return r.rep, nil
}

// coordinator is classic 2PC's coordinator: the only one who knows the
// decision.
type coordinator struct {
	mu       sync.Mutex
	up       bool
	decision string
}

func (c *coordinator) answer() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.decision, c.up
}

func (c *coordinator) set(up bool, decision string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.up, c.decision = up, decision
}

// classicParticipant votes yes (taking its row lock) and then waits for the
// decision, asking the coordinator every r.ask.
func (r *twoPCRun) classicParticipant(ctx context.Context, p *participant, coord *coordinator, votes chan<- string, results chan<- outcome2PC) {
	p.lock <- struct{}{} // take the row lock for the transaction
	r.rec.State(p.name, report.StateHolder)
	out := outcome2PC{name: p.name, preparedT: time.Now()}
	votes <- p.name
	t := time.NewTicker(r.ask)
	defer t.Stop()
	for out.decision == "" {
		select {
		case d := <-p.decision:
			out.decision = d
		case <-t.C:
			// Ask the coordinator; the other participants know no more.
			call := time.Now()
			d, up := coord.answer()
			switch {
			case !up:
				r.rec.Op(p.name, "ask coordinator for the decision: no answer", call, time.Now(), report.OutcomeFail)
			case d != "":
				out.decision = d
				r.rec.Op(p.name, "ask coordinator: "+d, call, time.Now(), report.OutcomeOK)
			}
		case <-ctx.Done():
			return
		}
	}
	out.doneT = time.Now()
	<-p.lock
	r.rec.State(p.name, report.StateIdle)
	results <- out
}

// actClassic plays classic 2PC: three participants vote yes, the
// coordinator crashes before telling them the decision, another
// transaction wants a locked row, and the coordinator returns.
func (r *twoPCRun) actClassic(ctx context.Context) (classicObs, error) {
	var obs classicObs
	r.env.Progressf("two-phase-commit: classic 2PC, coordinator down for %s after the votes", r.downtime)
	ps := []*participant{newParticipant("P1"), newParticipant("P2"), newParticipant("P3")}
	r.rec.State("coordinator", report.StateActive)
	coord := &coordinator{up: true}
	votes := make(chan string, len(ps))
	results := make(chan outcome2PC, len(ps))
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.classicParticipant(ctx, p, coord, votes, results)
		}()
	}
	for range ps {
		select {
		case <-votes:
		case <-ctx.Done():
			wg.Wait()
			return obs, ctx.Err()
		}
	}
	r.rec.Mark("coordinator", "all three voted yes; decides commit")
	// The coordinator crashes after collecting the votes, before it sends
	// (or durably logs) the decision.
	coord.set(false, "")
	obs.crashAt = time.Now()
	r.rec.State("coordinator", report.StateDown)
	r.rec.FaultStart("coordinator crashed")

	// Meanwhile another transaction wants P1's row.
	cluster.Sleep(ctx, r.downtime/3)
	t2call := time.Now()
	obs.t2Wait = r.downtime / 3
	select {
	case ps[0].lock <- struct{}{}:
		<-ps[0].lock
	case <-time.After(obs.t2Wait):
		obs.t2Blocked = true
	}
	outcomeT2 := report.OutcomeOK
	obs.t2Desc = "T2 locks P1's row"
	if obs.t2Blocked {
		outcomeT2, obs.t2Desc = report.OutcomeFail, fmt.Sprintf("T2 wants P1's row: still locked after %s", obs.t2Wait)
	}
	r.rec.Op("T2", obs.t2Desc, t2call, time.Now(), outcomeT2)

	cluster.Sleep(ctx, r.downtime-time.Since(obs.crashAt))
	// The coordinator returns; with no decision logged it presumes abort,
	// which is safe: nobody can have committed without hearing from it.
	coord.set(true, "abort")
	obs.back = time.Now()
	r.rec.FaultEnd("coordinator crashed")
	r.rec.State("coordinator", report.StateActive)
	r.rec.Mark("coordinator", "back: no decision in its log, presumes abort and tells everyone")
	for _, p := range ps {
		p.decision <- "abort"
	}
	wg.Wait()
	close(results)
	for o := range results {
		obs.outcomes = append(obs.outcomes, o)
	}
	sort.Slice(obs.outcomes, func(i, j int) bool { return obs.outcomes[i].name < obs.outcomes[j].name })
	r.rec.State("coordinator", report.StateIdle)
	return obs, nil
}

func (r *twoPCRun) judgeClassic(obs classicObs) {
	var blocked []string
	allWaited := true
	for _, o := range obs.outcomes {
		waited := o.doneT.Sub(obs.crashAt)
		blocked = append(blocked, fmt.Sprintf("%s blocked %s, then %s", o.name, waited.Round(time.Millisecond), o.decision))
		allWaited = allWaited && !o.doneT.Before(obs.back)
		r.rep.Metric("classic_blocked_ms_"+o.name, cluster.Ms(waited), "ms")
	}
	check(r.rep, claimParticipantsBlock, fmt.Sprintf("each stays prepared for the whole outage (%s), asking and getting no answer", r.downtime),
		strings.Join(blocked, ", "), allWaited && len(blocked) == 3)
	check(r.rep, claimBlockedHoldLocks, fmt.Sprintf("T2 cannot lock P1's row during the outage (waits %s)", obs.t2Wait.Round(time.Millisecond)),
		obs.t2Desc, obs.t2Blocked)
}

// labOp records a lab operation that has just returned.
func (r *twoPCRun) labOp(who, desc string, res cluster.Result, err error) {
	o := report.OutcomeOK
	if err != nil {
		o = report.OutcomeFail
		desc += ": " + shortErr(err)
	}
	r.rec.Op(who, desc, time.Now().Add(-res.Latency), time.Now(), o)
}

const txnKey = "txn/T3"

// actConsensus records T3's decision in a 3-node lab cluster, crashes the
// coordinator and the lab's leader, lets the participants read the
// decision, and has a late participant try to record abort.
func (r *twoPCRun) actConsensus(ctx context.Context) (consensusObs, error) {
	var obs consensusObs
	r.env.Progressf("two-phase-commit: the decision recorded in a 3-node lab cluster")
	c, err := startLab(ctx, r.env, labConfig(r.env, 3))
	if err != nil {
		return obs, err
	}
	defer c.Close()
	leader, err := waitLeader(ctx, c, 5*time.Second)
	if err != nil {
		return obs, err
	}
	obs.leader = leader
	coord := c.NewClient(0)
	res, err := coord.Put(ctx, txnKey, "pending")
	r.labOp("coordinator", "record T3 pending", res, err)
	if err != nil {
		return obs, fmt.Errorf("record pending: %w", err)
	}
	r.rec.State("coordinator", report.StateActive)
	ps := []*participant{newParticipant("P1"), newParticipant("P2"), newParticipant("P3")}
	for _, p := range ps {
		p.lock <- struct{}{}
		r.rec.State(p.name, report.StateHolder)
	}
	r.rec.Mark("coordinator", "T3: all three voted yes")
	res, err = coord.CAS(ctx, txnKey, "pending", "commit")
	r.labOp("coordinator", "record T3 commit (CAS pending→commit)", res, err)
	if err != nil || !res.Swapped {
		return obs, fmt.Errorf("record commit: swapped=%v err=%v", res.Swapped, err)
	}
	// The coordinator crashes before telling anyone, and so does the lab's leader.
	crashAt := time.Now()
	r.rec.State("coordinator", report.StateDown)
	r.rec.FaultStart("coordinator crashed (T3)")
	if err := c.Crash(leader); err != nil {
		return obs, err
	}
	r.rec.FaultStart(fmt.Sprintf("lab node n%d (the leader) crashed", leader))
	r.rec.Mark("", fmt.Sprintf("lab node n%d lost: 2 of 3 remain", leader))

	var wg sync.WaitGroup
	dones := make(chan consensusDone, len(ps))
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dones <- r.readDecision(ctx, c.NewClient(0), p, crashAt)
		}()
	}
	wg.Wait()
	close(dones)
	for d := range dones {
		obs.dones = append(obs.dones, d)
	}
	sort.Slice(obs.dones, func(i, j int) bool { return obs.dones[i].name < obs.dones[j].name })

	// A participant that had given up waiting would try to record abort.
	nowLeader, _ := c.Leader()
	late := c.NewClient(nowLeader)
	res, obs.lateErr = late.CAS(ctx, txnKey, "pending", "abort")
	obs.lateSwapped = res.Swapped
	r.labOp("P3", "record T3 abort (CAS pending→abort)", res, obs.lateErr)
	obs.final, obs.finalErr = late.Get(ctx, txnKey, cluster.ReadIndex)
	cluster.Sleep(ctx, 50*time.Millisecond)
	r.rec.FaultEnd("coordinator crashed (T3)")
	r.rec.FaultEnd(fmt.Sprintf("lab node n%d (the leader) crashed", leader))
	return obs, nil
}

// readDecision is a participant of part 2: it reads T3's record until it is
// no longer pending (or 10s pass), then releases its lock.
func (r *twoPCRun) readDecision(ctx context.Context, cl *cluster.Client, p *participant, crashAt time.Time) consensusDone {
	deadline := time.Now().Add(10 * time.Second)
	for {
		cluster.Sleep(ctx, 50*time.Millisecond)
		res, err := cl.Get(ctx, txnKey, cluster.ReadIndex)
		if err == nil && res.Value != "pending" {
			r.labOp(p.name, "read T3's decision: "+res.Value, res, nil)
			<-p.lock
			r.rec.State(p.name, report.StateIdle)
			return consensusDone{p.name, res.Value, time.Since(crashAt), nil}
		}
		if err != nil {
			r.labOp(p.name, "read T3's decision", res, err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return consensusDone{p.name, "", time.Since(crashAt), fmt.Errorf("no decision: %v", err)}
		}
	}
}

func (r *twoPCRun) judgeConsensus(obs consensusObs) {
	rep := r.rep
	var finished []string
	allCommitted := true
	var slowest time.Duration
	for _, d := range obs.dones {
		if d.err != nil {
			finished = append(finished, fmt.Sprintf("%s: %v", d.name, d.err))
			allCommitted = false
			continue
		}
		finished = append(finished, fmt.Sprintf("%s %s after %s", d.name, d.decision, d.took.Round(time.Millisecond)))
		allCommitted = allCommitted && d.decision == "commit"
		slowest = max(slowest, d.took)
		rep.Metric("consensus_done_ms_"+d.name, cluster.Ms(d.took), "ms")
	}
	check(rep, claimConsensusCompletes, fmt.Sprintf("all three read commit and release their locks while the coordinator is still down, well within its %s outage", r.downtime),
		strings.Join(finished, ", "), allCommitted && slowest < r.downtime)
	check(rep, claimDecidesOnce, "CAS pending→abort does not swap; the record stays commit",
		fmt.Sprintf("swapped=%v (%s); record is %s", obs.lateSwapped, errText(obs.lateErr), readValue(obs.final, obs.finalErr)),
		obs.lateErr == nil && !obs.lateSwapped && obs.finalErr == nil && obs.final.Value == "commit")
	rep.Metric("coordinator_downtime_ms", cluster.Ms(r.downtime), "ms")
	rep.AddTable(report.Table{
		Title:   "Who knows the decision when the coordinator is down",
		Columns: []string{"protocol", "decision kept by", "after the crash", "participants"},
		Rows: [][]string{
			{"classic 2PC", "the coordinator alone", "nobody can learn it", fmt.Sprintf("blocked %s, locks held", r.downtime)},
			{"decision through consensus", "a replicated record (3 lab nodes, one lost)", "any participant reads it", fmt.Sprintf("done in %s", slowest.Round(time.Millisecond))},
		},
	})
	rep.Note("In classic 2PC a prepared participant has promised to commit if told to and may not abort on its own; only the coordinator knows whether it decided. Recording the decision (or the abort of a participant that gave up) with one compare-and-set in a consensus group makes it available to everyone as long as a majority of that group is up: this is the idea of Paxos Commit.")
	rep.Note("The classic coordinator here crashed before logging its decision, so on its return it presumes abort; had it logged commit, the participants would have committed on its return. Either way they wait for it.")
}
