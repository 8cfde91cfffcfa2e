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
	claimStaleFollowerRead     ClaimID = "stale-follower-read"
	claimStaleNotLinearizable  ClaimID = "stale-not-linearizable"
	claimReadIndexNoAnomaly    ClaimID = "readindex-no-anomaly"
	claimReadIndexLinearizable ClaimID = "readindex-linearizable"
)

func staleRead() Scenario {
	return Scenario{
		Name:    "stale-read",
		Summary: "Alice reads the final score from the leader and tells Bob; Bob's read lands on a follower cut off from the leader and sees the match still running.",
		Claims: []Claim{
			{ID: claimStaleFollowerRead, Kind: Safety, Text: "a read served from a follower's local state can be stale: Bob sees the match running after Alice saw the final score"},
			{ID: claimStaleNotLinearizable, Kind: Safety, Text: "porcupine finds that history not linearizable"},
			{ID: claimReadIndexNoAnomaly, Kind: Safety, Text: "with readindex reads the anomaly disappears: the cut-off follower cannot answer, and the read through the leader is current"},
			{ID: claimReadIndexLinearizable, Kind: Safety, Text: "porcupine finds the readindex history linearizable"},
		},
		Run: runStaleRead,
	}
}

const (
	scoreRunning = "1-1 (match running)"
	scoreFinal   = "2-1 (final)"
)

// waitValue polls a stale read at node until it returns want.
func waitValue(ctx context.Context, cl *cluster.Client, node cluster.NodeID, key, want string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		r, err := cl.Do(ctx, cluster.Op{Kind: cluster.OpGet, Key: key, Mode: cluster.ReadStale, Node: node})
		if err == nil && r.Found && r.Value == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d did not apply %s=%q within %s", node, key, want, d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// storyResult is what one telling of the story saw.
type storyResult struct {
	alice, bob       cluster.Result
	bobErr           error
	bobRetry         cluster.Result
	verdict          cluster.CheckResult
	recs             []cluster.Record
	bobSawStale      bool
	bobRefused       bool
	bobRetryIsFinal  bool
	aliceSawFinal    bool
	bobStartedAfterA bool
}

func runStaleRead(ctx context.Context, env Env) (*report.Report, error) {
	rep := report.New("stale-read", "")
	c, err := startLab(ctx, env, labConfig(env, 3))
	if err != nil {
		return nil, err
	}
	defer c.Close()

	names := map[int]string{}
	hidden := map[int]bool{}
	story := func(key string, bobMode cluster.ReadMode) (storyResult, error) {
		var sr storyResult
		leader, err := waitLeader(ctx, c, 5*time.Second)
		if err != nil {
			return sr, err
		}
		bobNode := leader%3 + 1 // a follower
		scorer, alice, bob := c.NewClient(0), c.NewClient(leader), c.NewClient(bobNode)
		names[scorer.ID()], names[alice.ID()], names[bob.ID()] = "scorer", "alice", "bob"
		if _, err := scorer.Put(ctx, key, scoreRunning); err != nil {
			return sr, fmt.Errorf("first put: %w", err)
		}
		// Wait until Bob's node has the first score, with a client whose
		// polling reads are left out of the checked history.
		poller := c.NewClient(bobNode)
		hidden[poller.ID()] = true
		if err := waitValue(ctx, poller, bobNode, key, scoreRunning, 3*time.Second); err != nil {
			return sr, err
		}
		env.Progressf("stale-read (%s): cutting node %d off from the leader", bobMode, bobNode)
		if err := c.Isolate(bobNode); err != nil {
			return sr, err
		}
		if _, err := scorer.Put(ctx, key, scoreFinal); err != nil {
			return sr, fmt.Errorf("final put: %w", err)
		}
		sr.alice, err = alice.Do(ctx, cluster.Op{Kind: cluster.OpGet, Key: key, Mode: cluster.ReadIndex})
		if err != nil {
			return sr, fmt.Errorf("alice's read: %w", err)
		}
		sr.aliceSawFinal = sr.alice.Value == scoreFinal
		// Alice shouts the score to Bob; then Bob reads.
		sr.bob, sr.bobErr = bob.Do(ctx, cluster.Op{Kind: cluster.OpGet, Key: key, Mode: bobMode, Node: bobNode})
		sr.bobStartedAfterA = sr.bob.CallNs > sr.alice.RetNs
		sr.bobSawStale = sr.bobErr == nil && sr.bob.Value == scoreRunning
		sr.bobRefused = sr.bobErr != nil
		if sr.bobRefused {
			// Bob tries again through whichever node leads.
			retry := c.NewClient(0)
			names[retry.ID()] = "bob (retry)"
			sr.bobRetry, err = retry.Get(ctx, key, bobMode)
			if err != nil {
				return sr, fmt.Errorf("bob's retry through the leader: %w", err)
			}
			sr.bobRetryIsFinal = sr.bobRetry.Value == scoreFinal
		}
		// Keep the partition a moment longer so that the picture shows it.
		cluster.Sleep(ctx, 150*time.Millisecond)
		sr.recs = without(c.History(), hidden)
		sr.verdict = cluster.CheckHistory(sr.recs, 10*time.Second)
		c.Heal()
		return sr, nil
	}

	stale, err := story("score", cluster.ReadStale)
	if err != nil {
		return nil, err
	}
	first := stale.recs
	c.ResetHistory()
	safe, err := story("score-readindex", cluster.ReadIndex)
	if err != nil {
		return nil, err
	}

	check(rep, claimStaleFollowerRead, fmt.Sprintf("Alice reads %q; Bob, after hearing it, reads %q", scoreFinal, scoreRunning),
		fmt.Sprintf("Alice read %q (readindex at n%d); Bob then read %q (stale at n%d), starting %s after Alice's read returned",
			stale.alice.Value, stale.alice.Node, readValue(stale.bob, stale.bobErr), stale.bob.Entry, time.Duration(stale.bob.CallNs-stale.alice.RetNs).Round(time.Microsecond)),
		stale.aliceSawFinal && stale.bobSawStale && stale.bobStartedAfterA)
	check(rep, claimStaleNotLinearizable, "Illegal (not linearizable)",
		fmt.Sprintf("%s over %d operations", stale.verdict.Verdict, stale.verdict.Ops),
		!stale.verdict.Linearizable && stale.verdict.Verdict == "Illegal")
	var refuseWhy string
	if safe.bobErr != nil {
		refuseWhy = safe.bobErr.Error()
	}
	check(rep, claimReadIndexNoAnomaly, fmt.Sprintf("the cut-off follower cannot confirm a leader and does not answer; through the leader Bob reads %q", scoreFinal),
		fmt.Sprintf("at n%d: %s after %s; retry through the leader read %q", safe.bob.Entry, outcomeText(safe.bob, safe.bobErr), safe.bob.Latency.Round(time.Millisecond), safe.bobRetry.Value),
		safe.aliceSawFinal && safe.bobRefused && safe.bobRetryIsFinal)
	check(rep, claimReadIndexLinearizable, "Ok (linearizable)",
		fmt.Sprintf("%s over %d operations", safe.verdict.Verdict, safe.verdict.Ops),
		safe.verdict.Linearizable)

	rep.Metric("stale_read_ms", cluster.Ms(stale.bob.Latency), "ms")
	rep.Metric("readindex_read_ms", cluster.Ms(stale.alice.Latency), "ms")
	rep.Metric("readindex_refusal_ms", cluster.Ms(safe.bob.Latency), "ms")
	rep.AddTable(report.Table{
		Title:   "Bob's read, by read mode",
		Columns: []string{"mode", "node", "answer", "latency", "porcupine"},
		Rows: [][]string{
			{"stale", nodeName(stale.bob.Entry), readValue(stale.bob, stale.bobErr), stale.bob.Latency.Round(time.Microsecond).String(), stale.verdict.Verdict},
			{"readindex", nodeName(safe.bob.Entry), outcomeText(safe.bob, safe.bobErr), safe.bob.Latency.Round(time.Millisecond).String(), safe.verdict.Verdict},
			{"readindex (retry)", nodeName(safe.bobRetry.Entry), safe.bobRetry.Value, safe.bobRetry.Latency.Round(time.Microsecond).String(), safe.verdict.Verdict},
		},
	})
	if refuseWhy != "" {
		rep.Note("Why the cut-off follower did not answer the readindex read: %s", refuseWhy)
	}
	rep.Note("A stale read is fast because it asks no one; it is wrong because the node it asks may have been cut off since. readindex asks the leader for its commit index and has it confirm its leadership with a quorum first.")
	rep.Timeline = labTimeline(c, append(first, safe.recs...), names)
	return rep, nil
}

// without returns recs minus the operations of the clients in hidden.
func without(recs []cluster.Record, hidden map[int]bool) []cluster.Record {
	out := make([]cluster.Record, 0, len(recs))
	for _, r := range recs {
		if !hidden[r.Client] {
			out = append(out, r)
		}
	}
	return out
}

func readValue(r cluster.Result, err error) string {
	if err != nil {
		return "error: " + shortErr(err)
	}
	if !r.Found {
		return "(none)"
	}
	return r.Value
}

func outcomeText(r cluster.Result, err error) string {
	if err == nil {
		return fmt.Sprintf("answered %q", r.Value)
	}
	switch {
	case errors.Is(err, cluster.ErrTimeout):
		return "no answer (timed out)"
	case errors.Is(err, cluster.ErrNoLeader), errors.Is(err, cluster.ErrNotLeader):
		return "refused (no leader it can reach)"
	}
	return "failed: " + shortErr(err)
}
