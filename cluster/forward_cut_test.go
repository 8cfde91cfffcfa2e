package cluster

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A put through a follower right after a partition cut it off the leader
// it still believes in ends unknown, and the error says why and what to
// do (issue 25, item 15).
func TestForwardAcrossACutLinkSaysWhy(t *testing.T) {
	cfg := DefaultConfig()
	cfg.OpTimeout = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	leader, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var via NodeID
	var rest []NodeID
	for i := 1; i <= cfg.Nodes; i++ {
		if id := NodeID(i); id != leader {
			rest = append(rest, id)
		}
	}
	via = rest[0]
	// Wait until the follower names the leader, so the put is forwarded.
	for c.LeaderOf(via) != leader {
		if ctx.Err() != nil {
			t.Fatal("the follower never named the leader")
		}
		time.Sleep(time.Millisecond)
	}
	if err := c.Partition([]NodeID{leader}, rest); err != nil {
		t.Fatal(err)
	}
	res, err := c.NewClient(via).Put(ctx, "k", "v")
	if err == nil {
		t.Fatalf("put across the cut succeeded: %+v", res)
	}
	if res.Outcome != OutcomeUnknown {
		t.Skipf("the follower had already given up on the old leader (outcome %s: %v): nothing forwarded", res.Outcome, err)
	}
	for _, want := range []string{"still believes", "cut link", "wait leader"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
