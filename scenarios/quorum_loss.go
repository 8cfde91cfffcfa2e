package scenarios

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/scenarios/report"
)

// The claims of the scenarios in this file: declared in Scenario.Claims, checked by ID.
const (
	claimWritesStop            ClaimID = "writes-stop-within-timeout"
	claimStaleReadsContinue    ClaimID = "stale-reads-continue"
	claimLinearizableReadsFail ClaimID = "linearizable-reads-fail"
	claimWritesResume          ClaimID = "writes-resume"
	claimNoAckedWriteLost      ClaimID = "no-acked-write-lost"
)

func quorumLoss() Scenario {
	return Scenario{
		Name:    "quorum-loss",
		Summary: "3 nodes, 2 crashed: writes stop with an error in bounded time, stale reads go on, linearizable reads fail; after a restart writes resume and no acknowledged write is lost.",
		Claims: []Claim{
			{ID: claimWritesStop, Kind: Timing, Text: "without a quorum writes stop, failing with an error within the operation timeout"},
			{ID: claimStaleReadsContinue, Kind: Timing, Text: "stale reads continue from the surviving node's local state"},
			{ID: claimLinearizableReadsFail, Kind: Safety, Text: "linearizable reads fail without a quorum"},
			{ID: claimWritesResume, Kind: Safety, Text: "after a restart restores the quorum, writes resume"},
			{ID: claimNoAckedWriteLost, Kind: Safety, Text: "no acknowledged write is lost"},
		},
		Run: runQuorumLoss,
	}
}

func runQuorumLoss(ctx context.Context, env Env) (*report.Report, error) {
	rep := report.New("quorum-loss", "")
	cfg := labConfig(env, 3)
	c, err := startLab(ctx, env, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	leader, err := waitLeader(ctx, c, 5*time.Second)
	if err != nil {
		return nil, err
	}
	names := map[int]string{}
	writer := c.NewClient(0)
	names[writer.ID()] = "writer"
	w := startWriter(ctx, writer, "w", Pick(env.Scale, 20*time.Millisecond, 5*time.Millisecond))
	defer w.Stop()

	// Some writes with all three up.
	cluster.Sleep(ctx, Pick(env.Scale, 300*time.Millisecond, time.Second))
	// Crash the leader and one follower; the third node survives.
	survivor := leader%3 + 1
	other := survivor%3 + 1
	if other == leader {
		other = other%3 + 1
	}
	env.Progressf("quorum-loss: crashing n%d (leader) and n%d; n%d survives", leader, other, survivor)
	lastBefore := lastAcked(c.History(), writer.ID())
	if err := c.Crash(leader); err != nil {
		return nil, err
	}
	if err := c.Crash(other); err != nil {
		return nil, err
	}
	crashedAt := time.Now()

	// A probe write through the survivor, and reads there.
	prober := c.NewClient(survivor)
	names[prober.ID()] = "prober"
	pw, pwErr := prober.Put(ctx, "probe", "during the outage")
	sr, srErr := prober.Get(ctx, lastBefore.Key, cluster.ReadStale)
	lr, lrErr := prober.Get(ctx, lastBefore.Key, cluster.ReadIndex)

	// Restart one node: two of three is a quorum again.
	env.Progressf("quorum-loss: restarting n%d", other)
	if err := c.Restart(other); err != nil {
		return nil, err
	}
	restartedAt := time.Now()
	var resumed cluster.Result
	var resumeErr error
	for time.Since(restartedAt) < 10*time.Second {
		resumed, resumeErr = prober.Do(ctx, cluster.Op{Kind: cluster.OpPut, Key: "after-restart", Value: "ok"})
		if resumeErr == nil {
			break
		}
	}
	resumeAfter := time.Since(restartedAt)
	cluster.Sleep(ctx, Pick(env.Scale, 200*time.Millisecond, time.Second))
	if err := c.Restart(leader); err != nil {
		return nil, err
	}
	cluster.Sleep(ctx, Pick(env.Scale, 200*time.Millisecond, time.Second))
	w.Stop()

	recs := c.History()
	present, total, missing, err := ackedWritesPresent(ctx, c, recs)
	if err != nil {
		return nil, err
	}
	okW, failW, unkW := outcomes(recs, writer.ID())
	verdict := cluster.CheckHistory(recs, 10*time.Second)
	var noStale []cluster.Record
	for _, r := range recs {
		if r.Mode != cluster.ReadStale {
			noStale = append(noStale, r)
		}
	}
	verdictLin := cluster.CheckHistory(noStale, 10*time.Second)

	bound := cfg.OpTimeout + cfg.OpTimeout/2
	check(rep, claimWritesStop, fmt.Sprintf("the write fails (not hangs) within %s (op timeout %s)", bound, cfg.OpTimeout),
		fmt.Sprintf("%s after %s: %s", pw.Outcome, pw.Latency.Round(time.Millisecond), errText(pwErr)),
		pwErr != nil && pw.Outcome != cluster.OutcomeOK && pw.Latency <= bound)
	current := "the last acknowledged value"
	if !sr.Found || sr.Value != lastBefore.Value {
		current = fmt.Sprintf("behind: the last acknowledged value was %s", lastBefore.Value)
	}
	check(rep, claimStaleReadsContinue, fmt.Sprintf("n%d answers %s at once from its local state, which may lag", survivor, lastBefore.Key),
		fmt.Sprintf("answered %s in %s (%s)", readValue(sr, srErr), sr.Latency.Round(time.Microsecond), current),
		srErr == nil && sr.Latency < cfg.OpTimeout/10)
	check(rep, claimLinearizableReadsFail, "a readindex read fails: no leader can confirm it leads",
		fmt.Sprintf("%s after %s: %s", lr.Outcome, lr.Latency.Round(time.Millisecond), errText(lrErr)),
		lrErr != nil)
	check(rep, claimWritesResume, "a write succeeds once n"+fmt.Sprint(other)+" is back (2 of 3 up)",
		fmt.Sprintf("%s, %s after the restart", outcomeWord(resumeErr), resumeAfter.Round(time.Millisecond)),
		resumeErr == nil && resumed.Outcome == cluster.OutcomeOK)
	missText := ""
	if len(missing) > 0 {
		missText = "; missing: " + fmt.Sprint(missing)
	}
	check(rep, claimNoAckedWriteLost, fmt.Sprintf("all %d keys with an acknowledged write hold it", total),
		fmt.Sprintf("%d of %d present%s", present, total, missText),
		present == total && total > 0)

	rep.Metric("writes_ok", float64(okW), "")
	rep.Metric("writes_failed", float64(failW), "")
	rep.Metric("writes_unknown", float64(unkW), "")
	rep.Metric("failed_write_ms", cluster.Ms(pw.Latency), "ms")
	rep.Metric("stale_read_during_outage_ms", cluster.Ms(sr.Latency), "ms")
	rep.Metric("resume_after_restart_ms", cluster.Ms(resumeAfter), "ms")
	rep.Metric("outage_ms", cluster.Ms(restartedAt.Sub(crashedAt)), "ms")
	rep.Note("porcupine on the writes and linearizable reads: %s over %d operations; with the stale read added: %s.", verdictLin.Verdict, verdictLin.Ops, verdict.Verdict)
	rep.Note("The lab's diagnosis of the failed write: %s", errText(pwErr))
	rep.Timeline = labTimeline(c, recs, names)
	return rep, nil
}

// lastAcked returns the last put of client id that was acknowledged.
func lastAcked(recs []cluster.Record, id int) cluster.Record {
	var last cluster.Record
	for _, r := range recs {
		if r.Client == id && r.Op == cluster.OpPut && r.Outcome == cluster.OutcomeOK && r.ReturnNs >= last.ReturnNs {
			last = r
		}
	}
	return last
}

func errText(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

func outcomeWord(err error) string {
	if err == nil {
		return "succeeded"
	}
	if errors.Is(err, cluster.ErrTimeout) {
		return "timed out"
	}
	return "failed: " + shortErr(err)
}
