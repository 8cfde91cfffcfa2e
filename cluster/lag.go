package cluster

import (
	"fmt"

	"github.com/hashicorp/raft"
)

// SetLagging makes node id's log fall behind while it still follows: every
// AppendEntries that carries log entries to it is dropped on the way (and
// counted as dropped on its link), while heartbeats, votes and everything
// else pass. The node keeps hearing the leader, so it does not stand for
// election, but it misses every entry committed meanwhile: a candidate the
// election restriction forbids to win — the Raft paper's "different log
// lengths" of Figure 16. Off, the leader's next AppendEntries brings it up
// to date.
func (c *Cluster) SetLagging(id NodeID, on bool) error {
	if err := c.check(id); err != nil {
		return err
	}
	c.nw.mu.Lock()
	if c.nw.lagging == nil {
		c.nw.lagging = make([]bool, c.nw.n+1)
	}
	c.nw.lagging[id] = on
	c.nw.mu.Unlock()
	if on {
		c.fault(EventFault, "lagging %d (entries to it dropped, heartbeats pass)", id)
	} else {
		c.fault(EventHeal, "lagging %d ends", id)
	}
	return nil
}

// dropsEntries reports whether cmd carries log entries to a lagging node.
// If so the message is counted as sent and dropped on from→to.
func (nw *network) dropsEntries(from, to NodeID, cmd any) bool {
	req, ok := cmd.(*raft.AppendEntriesRequest)
	if !ok || len(req.Entries) == 0 {
		return false
	}
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.lagging == nil || !nw.lagging[to] {
		return false
	}
	l := nw.links[from][to]
	l.stats.Sent++
	l.stats.Dropped++
	return true
}

// LeaderOf returns whom node id believes leads (itself when it leads), 0
// when it knows no leader or is down.
func (c *Cluster) LeaderOf(id NodeID) NodeID {
	inc := c.current(id)
	if inc == nil {
		return 0
	}
	return leaderOf(inc)
}

// Term returns node id's current term, 0 when it is down.
func (c *Cluster) Term(id NodeID) uint64 {
	inc := c.current(id)
	if inc == nil {
		return 0
	}
	return inc.raft.CurrentTerm()
}

// LastIndex returns the index of the last entry in node id's log, 0 when
// it is down.
func (c *Cluster) LastIndex(id NodeID) (uint64, error) {
	inc := c.current(id)
	if inc == nil {
		return 0, fmt.Errorf("node %d: %w", id, ErrNodeDown)
	}
	return inc.raft.LastIndex(), nil
}
