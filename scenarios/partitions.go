package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/coordkit/coordkit/chart"
	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/scenarios/report"
)

// The claims of the scenarios in this file: declared in Scenario.Claims, checked by ID.
const (
	claimMinorityRefuses       ClaimID = "minority-refuses"
	claimMajorityWrites        ClaimID = "majority-writes"
	claimMinorityCatchesUp     ClaimID = "minority-catches-up"
	claimPartitionLinearizable ClaimID = "linearizable"
	claimAckedWritesPresent    ClaimID = "acked-writes-present"
	claimEvenSplitStops        ClaimID = "even-split-stops"
	claimOddSplitWrites        ClaimID = "odd-split-writes"
	claimToleratesHalf         ClaimID = "tolerates-n-1-over-2"
	claimSixNoBetterThanFive   ClaimID = "six-no-better-than-five"
)

func minorityPartition() Scenario {
	return Scenario{
		Name:    "minority-partition",
		Summary: "5 nodes split 2|3 with the leader in the minority: the minority refuses writes, the majority elects a leader and keeps writing, and after healing the minority catches up.",
		Claims: []Claim{
			{ID: claimMinorityRefuses, Kind: Safety, Text: "the minority side refuses writes"},
			{ID: claimMajorityWrites, Kind: Safety, Text: "the majority side elects a leader and keeps writing"},
			{ID: claimMinorityCatchesUp, Kind: Safety, Text: "after healing the minority catches up"},
			{ID: claimPartitionLinearizable, Kind: Safety, Text: "the history is linearizable"},
			{ID: claimAckedWritesPresent, Kind: Safety, Text: "every acknowledged write is present"},
		},
		Run: runMinorityPartition,
	}
}

func runMinorityPartition(ctx context.Context, env Env) (*report.Report, error) {
	rep := report.New("minority-partition", "")
	cfg := labConfig(env, 5)
	c, err := startLab(ctx, env, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	old, err := waitLeader(ctx, c, 5*time.Second)
	if err != nil {
		return nil, err
	}
	names := map[int]string{}
	hidden := map[int]bool{}
	writer := c.NewClient(0)
	names[writer.ID()] = "writer"
	w := startWriter(ctx, writer, "w", Pick(env.Scale, 20*time.Millisecond, 5*time.Millisecond))
	defer w.Stop()
	cluster.Sleep(ctx, Pick(env.Scale, 250*time.Millisecond, time.Second))

	// The old leader and one follower form the minority.
	minority := []cluster.NodeID{old, old%5 + 1}
	var majority []cluster.NodeID
	for i := 1; i <= 5; i++ {
		if id := cluster.NodeID(i); id != minority[0] && id != minority[1] {
			majority = append(majority, id)
		}
	}
	env.Progressf("minority-partition: partition %s", cluster.FormatGroups([][]cluster.NodeID{minority, majority}))
	if err := c.Partition(minority, majority); err != nil {
		return nil, err
	}
	partAt := c.Now()
	start := time.Now()

	// The minority: a write at the old leader.
	minClient := c.NewClient(minority[0])
	names[minClient.ID()] = "minority client"
	mw, mwErr := minClient.Put(ctx, "minority", "should not commit")

	// The majority elects a leader of its own.
	ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
	newLeader, err := c.WaitNewLeader(ectx, old)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("no new leader in the majority: %w", err)
	}
	electedAfter := time.Since(start)
	majClient := c.NewClient(newLeader)
	names[majClient.ID()] = "majority client"
	var majOK int
	for i := 0; i < 5; i++ {
		if _, err := majClient.Put(ctx, fmt.Sprintf("maj%d", i), fmt.Sprint(i)); err == nil {
			majOK++
		}
	}
	cluster.Sleep(ctx, Pick(env.Scale, 200*time.Millisecond, time.Second))
	healAt := c.Now()
	c.Heal()
	healed := time.Now()

	// The minority catches up: poll a stale read at the old leader for the
	// majority's last write.
	poller := c.NewClient(minority[0])
	hidden[poller.ID()] = true
	caughtUp := waitValue(ctx, poller, minority[0], "maj4", "4", 5*time.Second) == nil
	catchUp := time.Since(healed)
	cluster.Sleep(ctx, Pick(env.Scale, 150*time.Millisecond, time.Second))
	w.Stop()

	recs := without(c.History(), hidden)
	var duringOK int
	for _, r := range recs {
		if r.Op == cluster.OpPut && r.Outcome == cluster.OutcomeOK && r.CallNs >= partAt && r.ReturnNs <= healAt {
			duringOK++
		}
	}
	verdict := cluster.CheckHistory(recs, 10*time.Second)
	present, total, missing, err := ackedWritesPresent(ctx, c, recs)
	if err != nil {
		return nil, err
	}
	// An unknown outcome only says the client gave up: read the key through
	// the log after the heal to show the write never committed.
	reader := c.NewClient(0)
	hidden[reader.ID()] = true
	after, err := reader.Get(ctx, "minority", cluster.ReadLog)
	if err != nil {
		return nil, fmt.Errorf("read back the minority's write: %w", err)
	}

	check(rep, claimMinorityRefuses, fmt.Sprintf("a write at n%d (the old leader, now with 2 of 5) is not acknowledged and never commits", minority[0]),
		fmt.Sprintf("%s after %s: %s; after the heal a read through the log finds the key: %v", mw.Outcome, mw.Latency.Round(time.Millisecond), errText(mwErr), after.Found),
		mwErr != nil && mw.Outcome != cluster.OutcomeOK && !after.Found)
	check(rep, claimMajorityWrites, "a new leader among "+fmt.Sprint(majority)+"; writes succeed during the partition",
		fmt.Sprintf("n%d elected %s after the split; %d writes acknowledged during the partition (%d of 5 by the majority client)", newLeader, electedAfter.Round(time.Millisecond), duringOK, majOK),
		contains(majority, newLeader) && majOK == 5 && duringOK >= 5)
	check(rep, claimMinorityCatchesUp, fmt.Sprintf("n%d applies the majority's writes after the heal", minority[0]),
		fmt.Sprintf("caught up: %v, %s after the heal", caughtUp, catchUp.Round(time.Millisecond)),
		caughtUp)
	check(rep, claimPartitionLinearizable, "porcupine: Ok",
		fmt.Sprintf("%s over %d operations", verdict.Verdict, verdict.Ops),
		verdict.Linearizable)
	check(rep, claimAckedWritesPresent, fmt.Sprintf("all %d keys with an acknowledged write hold it", total),
		fmt.Sprintf("%d of %d present%s", present, total, missingText(missing)),
		present == total && total > 0)
	okW, failW, unkW := outcomes(recs, -1)
	rep.Metric("election_after_split_ms", cluster.Ms(electedAfter), "ms")
	rep.Metric("catch_up_after_heal_ms", cluster.Ms(catchUp), "ms")
	rep.Metric("writes_ok", float64(okW), "")
	rep.Metric("writes_failed", float64(failW), "")
	rep.Metric("writes_unknown", float64(unkW), "")
	rep.Note("Raft needs a majority (3 of 5) to elect a leader and to commit; the side with 2 cannot do either, so it cannot accept a write that the other side would not see.")
	rep.Timeline = labTimeline(c, recs, names)
	return rep, nil
}

func contains(ids []cluster.NodeID, id cluster.NodeID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func missingText(missing []string) string {
	if len(missing) == 0 {
		return ""
	}
	if len(missing) > 3 {
		return fmt.Sprintf("; missing: %v and %d more", missing[:3], len(missing)-3)
	}
	return fmt.Sprintf("; missing: %v", missing)
}

func evenSplit() Scenario {
	return Scenario{
		Name:    "even-split",
		Summary: "6 nodes split 3|3 cannot write on either side; 5 nodes split 3|2 keep one side writing; for N = 1..7 the quorum and the failures tolerated, each verified by crashing nodes until writes stop.",
		Claims: []Claim{
			{ID: claimEvenSplitStops, Kind: Safety, Text: "6 nodes split 3|3: no side can write"},
			{ID: claimOddSplitWrites, Kind: Safety, Text: "5 nodes split 3|2: the side of 3 keeps writing"},
			{ID: claimToleratesHalf, Kind: Safety, Text: "a cluster of N tolerates (N-1)/2 failures: verified for N = 1..7"},
			{ID: claimSixNoBetterThanFive, Kind: Safety, Text: "a 6-node cluster survives no more failures than a 5-node one"},
		},
		Run: runEvenSplit,
	}
}

// splitProbe partitions a fresh cluster of n nodes into groups and tries a
// write at a node of each side once the sides have settled.
func splitProbe(ctx context.Context, env Env, n int, groups [][]cluster.NodeID) (wrote []bool, errs []error, err error) {
	cfg := labConfig(env, n)
	c, err := startLab(ctx, env, cfg)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	if _, err := waitLeader(ctx, c, 5*time.Second); err != nil {
		return nil, nil, err
	}
	if err := c.Partition(groups...); err != nil {
		return nil, nil, err
	}
	// Let the old leader's lease run out and an election happen where one can.
	t := c.Timing()
	cluster.Sleep(ctx, 2*t.Heartbeat+2*t.Election)
	wrote = make([]bool, len(groups))
	errs = make([]error, len(groups))
	type res struct {
		i   int
		err error
	}
	ch := make(chan res, len(groups))
	for i, g := range groups {
		go func() {
			cl := c.NewClient(g[0])
			_, err := cl.Put(ctx, fmt.Sprintf("side%d", i), "x")
			ch <- res{i, err}
		}()
	}
	for range groups {
		r := <-ch
		wrote[r.i], errs[r.i] = r.err == nil, r.err
	}
	return wrote, errs, nil
}

func ids(from, to int) []cluster.NodeID {
	var out []cluster.NodeID
	for i := from; i <= to; i++ {
		out = append(out, cluster.NodeID(i))
	}
	return out
}

// toleratedFailures crashes the followers of a fresh cluster of n nodes one
// at a time (the leader last) and writes after each crash; it returns how
// many crashes the writes survived.
func toleratedFailures(ctx context.Context, env Env, n int) (int, error) {
	cfg := labConfig(env, n)
	cfg.OpTimeout = 600 * time.Millisecond
	c, err := startLab(ctx, env, cfg)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	leader, err := waitLeader(ctx, c, 5*time.Second)
	if err != nil {
		return 0, err
	}
	cl := c.NewClient(leader)
	if _, err := cl.Put(ctx, "k", "0"); err != nil {
		return 0, fmt.Errorf("cluster of %d: first write: %w", n, err)
	}
	order := []cluster.NodeID{}
	for i := 1; i <= n; i++ {
		if cluster.NodeID(i) != leader {
			order = append(order, cluster.NodeID(i))
		}
	}
	order = append(order, leader)
	for crashed, id := range order {
		if err := c.Crash(id); err != nil {
			return 0, err
		}
		if _, err := cl.Put(ctx, "k", fmt.Sprint(crashed+1)); err != nil {
			return crashed, nil
		}
	}
	return n, nil
}

func runEvenSplit(ctx context.Context, env Env) (*report.Report, error) {
	rep := report.New("even-split", "")
	env.Progressf("even-split: 6 nodes, partition 1,2,3|4,5,6")
	wrote6, errs6, err := splitProbe(ctx, env, 6, [][]cluster.NodeID{ids(1, 3), ids(4, 6)})
	if err != nil {
		return nil, err
	}
	env.Progressf("even-split: 5 nodes, partition 1,2,3|4,5")
	wrote5, errs5, err := splitProbe(ctx, env, 5, [][]cluster.NodeID{ids(1, 3), ids(4, 5)})
	if err != nil {
		return nil, err
	}
	check(rep, claimEvenSplitStops, "both sides refuse: 3 is not a majority of 6 (quorum 4)",
		fmt.Sprintf("side 1,2,3: %s; side 4,5,6: %s", sideText(wrote6[0], errs6[0]), sideText(wrote6[1], errs6[1])),
		!wrote6[0] && !wrote6[1])
	check(rep, claimOddSplitWrites, "side 1,2,3 writes (3 of 5 is a quorum); side 4,5 refuses",
		fmt.Sprintf("side 1,2,3: %s; side 4,5: %s", sideText(wrote5[0], errs5[0]), sideText(wrote5[1], errs5[1])),
		wrote5[0] && !wrote5[1])

	maxN := 7
	tbl := report.Table{Title: "Quorum and tolerated failures by cluster size", Columns: []string{"N", "quorum N/2+1", "tolerates (N-1)/2", "observed: crashes survived", "agrees"}}
	ch := chart.Chart{Title: "Failures tolerated by cluster size", XLabel: "nodes", YLabel: "failures tolerated",
		Series: []chart.Series{{Name: "observed"}, {Name: "(N-1)/2", Dashed: true}}}
	agree := 0
	observed := map[int]int{}
	for n := 1; n <= maxN; n++ {
		env.Progressf("even-split: N=%d, crashing nodes until writes stop", n)
		got, err := toleratedFailures(ctx, env, n)
		if err != nil {
			return nil, err
		}
		observed[n] = got
		want := (n - 1) / 2
		ok := got == want
		if ok {
			agree++
		}
		tbl.Rows = append(tbl.Rows, []string{fmt.Sprint(n), fmt.Sprint(n/2 + 1), fmt.Sprint(want), fmt.Sprint(got), yesNo(ok)})
		ch.Series[0].Points = append(ch.Series[0].Points, chart.Point{X: float64(n), Y: float64(got)})
		ch.Series[1].Points = append(ch.Series[1].Points, chart.Point{X: float64(n), Y: float64(want)})
		rep.Metric(fmt.Sprintf("tolerated_n%d", n), float64(got), "")
	}
	rep.AddTable(tbl)
	rep.AddChart(ch)
	check(rep, claimToleratesHalf, fmt.Sprintf("writes survive (N-1)/2 crashes and stop at the next, for N = 1..%d", maxN),
		fmt.Sprintf("%d of %d sizes agree", agree, maxN),
		agree == maxN)
	check(rep, claimSixNoBetterThanFive, "5 nodes: 2; 6 nodes: 2",
		fmt.Sprintf("5 nodes: %d; 6 nodes: %d", observed[5], observed[6]),
		observed[5] == 2 && observed[6] == 2)
	rep.Note("An even size adds a node to the quorum but not to the failures tolerated, and a 3|3 split leaves no side with a quorum.")
	return rep, nil
}

func sideText(wrote bool, err error) string {
	if wrote {
		return "wrote"
	}
	return "refused (" + shortErr(err) + ")"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
