package scenarios

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/scenarios/report"
)

// The claims of the scenarios in this file: declared in Scenario.Claims, checked by ID.
const (
	claimPartitionOnlyStaleOld ClaimID = "partition-only-stale-old"
	claimPauseLeaseOld         ClaimID = "pause-lease-old"
	claimSafeRungsLinearizable ClaimID = "safe-rungs-linearizable"
	claimPorcupineFlagsUnsafe  ClaimID = "porcupine-flags-unsafe"
)

func readLadder() Scenario {
	return Scenario{
		Name:    "read-ladder",
		Summary: "Each rung of the read ladder (stale, lease, verify, readindex, log) at an old leader cut off by a partition, and at an old leader paused while a new one took over: what it returns, what it costs, porcupine's verdict.",
		Claims: []Claim{
			{ID: claimPartitionOnlyStaleOld, Kind: Safety, Text: "under a partition, only a stale read at the cut-off old leader returns old data; the other rungs refuse there"},
			{ID: claimPauseLeaseOld, Kind: Safety, Text: "under a process pause, stale and lease reads at the old leader return old data: a lease is no defence against a pause"},
			{ID: claimSafeRungsLinearizable, Kind: Safety, Text: "verify, readindex and log reads stay linearizable in both situations"},
			{ID: claimPorcupineFlagsUnsafe, Kind: Safety, Text: "porcupine flags exactly the unsafe rungs"},
		},
		Run: runReadLadder,
	}
}

type rungResult struct {
	res     cluster.Result
	err     error
	verdict cluster.CheckResult
}

// ladderRun is the state of one run of read-ladder.
type ladderRun struct {
	env   Env
	rep   *report.Report
	c     *cluster.Cluster
	names map[int]string // lab clients' lanes on the timeline
	// margin is how long before the new leader the old one stepped down
	// under the partition; 0 if not seen.
	margin time.Duration
}

// ladderFault is one situation of the old leader: how to cause it and end
// it, and whether reads queue at the old leader until it ends (a pause).
type ladderFault struct {
	key, what      string
	fault, unfault func(old cluster.NodeID) error
	queued         bool
}

func runReadLadder(ctx context.Context, env Env) (*report.Report, error) {
	c, err := startLab(ctx, env, labConfig(env, 5))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	r := &ladderRun{env: env, rep: report.New("read-ladder", ""), c: c, names: map[int]string{}}
	part, err := r.situation(ctx, ladderFault{key: "x", what: "partition",
		fault:   func(old cluster.NodeID) error { return c.Isolate(old) },
		unfault: func(cluster.NodeID) error { c.Heal(); return nil }})
	if err != nil {
		return nil, err
	}
	pause, err := r.situation(ctx, ladderFault{key: "y", what: "pause",
		fault:   func(old cluster.NodeID) error { return c.Pause(old, 0) },
		unfault: func(old cluster.NodeID) error { return c.Resume(old) }, queued: true})
	if err != nil {
		return nil, err
	}
	r.judge(part, pause)
	r.rep.Timeline = labTimeline(c, c.History(), r.names)
	return r.rep, nil
}

// situation runs one story on f.key: the old leader keeps key=old, the new
// leader commits key=new, then every rung reads at the old leader; each
// rung's history is checked by porcupine.
func (r *ladderRun) situation(ctx context.Context, f ladderFault) (map[cluster.ReadMode]rungResult, error) {
	old, err := r.setupOld(ctx, f)
	if err != nil {
		return nil, err
	}
	if err := r.faultAndReplace(ctx, f, old); err != nil {
		return nil, err
	}
	out, readers, err := r.readAtOld(ctx, f, old)
	if err != nil {
		return nil, err
	}
	// porcupine, one rung at a time: the writes on key and that rung's read.
	hist := r.c.History()
	for _, m := range cluster.ReadModes() {
		var recs []cluster.Record
		for _, rec := range hist {
			if rec.Key == f.key && (rec.Op == cluster.OpPut || rec.Client == readers[m].ID()) {
				recs = append(recs, rec)
			}
		}
		rr := out[m]
		rr.verdict = cluster.CheckHistory(recs, 5*time.Second)
		out[m] = rr
	}
	return out, nil
}

// setupOld writes key=old at the leader and waits until every node has it;
// it returns that (old) leader.
func (r *ladderRun) setupOld(ctx context.Context, f ladderFault) (cluster.NodeID, error) {
	old, err := waitLeader(ctx, r.c, 5*time.Second)
	if err != nil {
		return 0, err
	}
	w0 := r.c.NewClient(old)
	r.names[w0.ID()] = "writer"
	if _, err := w0.Put(ctx, f.key, "old"); err != nil {
		return 0, fmt.Errorf("%s: first write: %w", f.what, err)
	}
	poll := r.c.NewClient(0)
	r.names[poll.ID()] = "poll"
	for i := 1; i <= r.c.Size(); i++ {
		if err := waitValue(ctx, poll, cluster.NodeID(i), f.key, "old", 3*time.Second); err != nil {
			return 0, err
		}
	}
	return old, nil
}

// faultAndReplace puts the old leader in the situation, waits for a new
// leader and writes key=new there.
func (r *ladderRun) faultAndReplace(ctx context.Context, f ladderFault, old cluster.NodeID) error {
	r.env.Progressf("read-ladder: %s of the old leader n%d", f.what, old)
	faultAt := r.c.Now()
	if err := f.fault(old); err != nil {
		return err
	}
	ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
	nl, err := r.c.WaitNewLeader(ectx, old)
	cancel()
	if err != nil {
		return fmt.Errorf("%s: no new leader: %w", f.what, err)
	}
	w1 := r.c.NewClient(nl)
	r.names[w1.ID()] = "writer"
	if _, err := w1.Put(ctx, f.key, "new"); err != nil {
		return fmt.Errorf("%s: write at the new leader: %w", f.what, err)
	}
	if f.what == "partition" {
		stepDown, elected := stepDownMargin(r.c.Timeline(), old, nl, faultAt)
		if stepDown > 0 && elected > 0 {
			r.margin = elected - stepDown
		}
	}
	return nil
}

// readAtOld reads key at the old leader with every rung at once and ends
// the fault (before the reads return if they queue there).
func (r *ladderRun) readAtOld(ctx context.Context, f ladderFault, old cluster.NodeID) (map[cluster.ReadMode]rungResult, map[cluster.ReadMode]*cluster.Client, error) {
	out := map[cluster.ReadMode]rungResult{}
	readers := map[cluster.ReadMode]*cluster.Client{}
	for _, m := range cluster.ReadModes() {
		readers[m] = r.c.NewClient(old)
		r.names[readers[m].ID()] = "read " + string(m)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range cluster.ReadModes() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := readers[m].Do(ctx, cluster.Op{Kind: cluster.OpGet, Key: f.key, Mode: m, Node: old})
			mu.Lock()
			out[m] = rungResult{res: res, err: err}
			mu.Unlock()
		}()
	}
	if f.queued {
		// The reads are queued at the paused node; let it run again.
		cluster.Sleep(ctx, 50*time.Millisecond)
		err := f.unfault(old)
		wg.Wait()
		return out, readers, err
	}
	wg.Wait()
	return out, readers, f.unfault(old)
}

// judge reports both situations: the table, the four claims and the notes.
func (r *ladderRun) judge(part, pause map[cluster.ReadMode]rungResult) {
	rep := r.rep
	tbl := report.Table{Title: "Each rung read at the old leader, after the new leader committed key=new",
		Columns: []string{"rung", "partition: answer", "latency", "porcupine", "pause: answer", "latency", "porcupine"}}
	for _, m := range cluster.ReadModes() {
		p, q := part[m], pause[m]
		tbl.Rows = append(tbl.Rows, []string{string(m),
			rungAnswer(p), roundDur(p.res.Latency), p.verdict.Verdict,
			rungAnswer(q), roundDur(q.res.Latency), q.verdict.Verdict})
		rep.Metric("partition_"+string(m)+"_ms", cluster.Ms(p.res.Latency), "ms")
		rep.Metric("pause_"+string(m)+"_ms", cluster.Ms(q.res.Latency), "ms")
	}
	rep.AddTable(tbl)

	oldValue := func(r rungResult) bool { return r.err == nil && r.res.Value == "old" }
	refused := func(r rungResult) bool { return r.err != nil }
	fresh := func(r rungResult) bool { return r.err != nil || r.res.Value == "new" }

	partOK := oldValue(part[cluster.ReadStale])
	var partObs []string
	for _, m := range cluster.ReadModes() {
		partObs = append(partObs, fmt.Sprintf("%s: %s", m, rungAnswer(part[m])))
		if m != cluster.ReadStale {
			partOK = partOK && refused(part[m])
		}
	}
	check(rep, claimPartitionOnlyStaleOld, "stale: old; lease, verify, readindex, log: refused (the lease ran out before the majority could elect anyone)",
		strings.Join(partObs, ", "), partOK)

	check(rep, claimPauseLeaseOld, "stale: old; lease: old (the paused leader still believes it leads)",
		fmt.Sprintf("stale: %s; lease: %s", rungAnswer(pause[cluster.ReadStale]), rungAnswer(pause[cluster.ReadLease])),
		oldValue(pause[cluster.ReadStale]) && oldValue(pause[cluster.ReadLease]))

	safe := true
	var safeObs []string
	for _, m := range []cluster.ReadMode{cluster.ReadVerify, cluster.ReadIndex, cluster.ReadLog} {
		safe = safe && fresh(part[m]) && fresh(pause[m]) && part[m].verdict.Linearizable && pause[m].verdict.Linearizable
		safeObs = append(safeObs, fmt.Sprintf("%s: partition %s, pause %s", m, part[m].verdict.Verdict, pause[m].verdict.Verdict))
	}
	check(rep, claimSafeRungsLinearizable, "never old data; porcupine Ok for each",
		strings.Join(safeObs, ", "), safe)

	want := map[string]bool{"partition stale": false, "partition lease": true, "pause stale": false, "pause lease": false}
	flagged := true
	var flags []string
	for _, m := range cluster.ReadModes() {
		for _, s := range []struct {
			name string
			r    rungResult
		}{{"partition", part[m]}, {"pause", pause[m]}} {
			expectOK, listed := want[s.name+" "+string(m)]
			if !listed {
				expectOK = true
			}
			if s.r.verdict.Linearizable != expectOK {
				flagged = false
			}
			if !s.r.verdict.Linearizable {
				flags = append(flags, s.name+" "+string(m))
			}
		}
	}
	check(rep, claimPorcupineFlagsUnsafe, "not linearizable: partition stale, pause stale, pause lease; all others Ok",
		"not linearizable: "+strings.Join(flags, ", "), flagged)
	if r.margin != 0 {
		rep.Metric("partition_stepdown_before_election_ms", cluster.Ms(r.margin), "ms")
		rep.Note("Under the partition the old leader stepped down %s before the majority elected a new one: that margin is what makes its lease reads safe. A pause that keeps it from running its step-down check, or a clock that runs slow by more than the margin, is what breaks them.", r.margin.Round(100*time.Microsecond))
	}
	rep.Note("A lease read is safe under a partition because the old leader's lease (%s) runs out before the others can elect a new leader; a paused leader cannot run the check that would make it step down, so it wakes up and answers from its old state before it notices that its lease ran out.", r.c.Timing().LeaderLease)
	rep.Note("verify and readindex at the old leader refuse or are forwarded to the new leader once the old one learns of the higher term; either way they never answer from the old state.")
}

func rungAnswer(r rungResult) string {
	if r.err != nil {
		return outcomeText(r.res, r.err)
	}
	where := ""
	if r.res.Node != 0 && r.res.Node != r.res.Entry {
		where = fmt.Sprintf(" (from n%d)", r.res.Node)
	}
	return fmt.Sprintf("%q%s", r.res.Value, where)
}

// roundDur rounds d for a table: microseconds below a millisecond, tenths
// of a millisecond below a second, milliseconds above.
func roundDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// stepDownMargin finds, after the fault at faultAt (ns on the cluster's
// clock), when the old leader stopped being leader and when the new one
// became leader, as offsets from the fault.
func stepDownMargin(ev []cluster.Event, old, nl cluster.NodeID, faultAt int64) (stepDown, elected time.Duration) {
	for _, e := range ev {
		if e.AtNs < faultAt || e.Kind != cluster.EventState {
			continue
		}
		if e.Node == old && stepDown == 0 && e.State != "Leader" {
			stepDown = time.Duration(e.AtNs - faultAt)
		}
		if e.Node == nl && elected == 0 && e.State == "Leader" {
			elected = time.Duration(e.AtNs - faultAt)
		}
	}
	return stepDown, elected
}
