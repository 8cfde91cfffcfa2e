package cluster_test

import (
	"context"
	"fmt"
	"time"

	"github.com/coordkit/coordkit/cluster"
)

// A three-node lab: write, cut a follower off, read it stale, and let
// porcupine judge the history.
func Example() {
	ctx := context.Background()
	cfg := cluster.DefaultConfig()
	cfg.Nodes = 3
	c, err := cluster.New(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	leader, _ := c.Leader()
	follower := cluster.NodeID(int(leader)%3 + 1)
	cl := c.NewClient(leader)
	res, _ := cl.Put(ctx, "x", "1")
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = c.WaitApplied(wctx, res.Index) // every node has x=1
	_ = c.Isolate(follower)
	_, _ = cl.Put(ctx, "x", "2")
	stale, _ := c.NewClient(follower).Get(ctx, "x", cluster.ReadStale)
	fresh, _ := c.NewClient(leader).Get(ctx, "x", cluster.ReadIndex)
	fmt.Println("put:", res.Outcome)
	fmt.Println("stale read on the cut-off follower:", stale.Value)
	fmt.Println("readindex read at the leader:", fresh.Value)
	fmt.Println("linearizable:", c.Check(5*time.Second).Linearizable)
	// Output:
	// put: ok
	// stale read on the cut-off follower: 1
	// readindex read at the leader: 2
	// linearizable: false
}
