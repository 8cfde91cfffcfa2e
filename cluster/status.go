package cluster

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// NodeStatus is one node's view, with the lab's view of what it can reach.
type NodeStatus struct {
	ID        NodeID   `json:"id"`
	Up        bool     `json:"up"`
	Paused    bool     `json:"paused"`
	State     string   `json:"state"` // leader, follower, candidate, down
	Term      uint64   `json:"term"`
	Commit    uint64   `json:"commit"`
	Applied   uint64   `json:"applied"`
	LastIndex uint64   `json:"last_index"`
	Leader    NodeID   `json:"leader"` // whom it believes leads; 0 none
	Reachable []NodeID `json:"reachable"`
	Quorum    bool     `json:"quorum"`
	Explain   string   `json:"explain"`
}

// Status is the whole cluster's availability, in numbers and in words.
type Status struct {
	Leader  NodeID       `json:"leader"`
	Term    uint64       `json:"term"`
	Quorum  int          `json:"quorum"`
	Nodes   []NodeStatus `json:"nodes"`
	Summary string       `json:"summary"`
}

// alive reports whether id runs and is not paused.
func (c *Cluster) alive(id NodeID) bool {
	inc := c.current(id)
	if inc == nil {
		return false
	}
	p, _ := inc.isPaused()
	return !p
}

// reachable lists the running, unpaused voters id can exchange messages
// with both ways (itself included).
func (c *Cluster) reachable(id NodeID) []NodeID {
	var out []NodeID
	for j := 1; j <= c.cfg.Nodes; j++ {
		if c.alive(NodeID(j)) && c.nw.connected(id, NodeID(j)) {
			out = append(out, NodeID(j))
		}
	}
	return out
}

func (c *Cluster) reachableVoters(id NodeID) int { return len(c.reachable(id)) }

// Status reports each node's state and explains whether the cluster can
// make progress.
func (c *Cluster) Status() Status {
	st := Status{Quorum: c.quorum()}
	st.Leader, st.Term = c.Leader()
	n := c.cfg.Nodes
	for i := 1; i <= n; i++ {
		id := NodeID(i)
		ns := NodeStatus{ID: id, State: "down"}
		inc := c.current(id)
		if inc == nil {
			ns.Explain = fmt.Sprintf("node %d: crashed — its log survives (%s storage) for restart", id, c.cfg.Storage)
			ns.Reachable = []NodeID{}
			st.Nodes = append(st.Nodes, ns)
			continue
		}
		ns.Up = true
		paused, until := inc.isPaused()
		ns.Paused = paused
		ns.State = strings.ToLower(inc.raft.State().String())
		ns.Term = inc.raft.CurrentTerm()
		ns.Commit = inc.raft.CommitIndex()
		ns.Applied = inc.raft.AppliedIndex()
		ns.LastIndex = inc.raft.LastIndex()
		ns.Leader = leaderOf(inc)
		if paused {
			ns.Reachable = []NodeID{}
		} else {
			ns.Reachable = c.reachable(id)
		}
		if ns.Reachable == nil {
			ns.Reachable = []NodeID{}
		}
		ns.Quorum = len(ns.Reachable) >= st.Quorum
		ns.Explain = c.explain(ns, n, st.Quorum, until)
		st.Nodes = append(st.Nodes, ns)
	}
	st.Summary = c.summary(st)
	return st
}

func (c *Cluster) explain(ns NodeStatus, n, q int, until time.Time) string {
	r := len(ns.Reachable)
	if ns.Paused {
		left := "until resumed"
		if !until.IsZero() {
			left = fmt.Sprintf("for another %s", until.Sub(c.clock.Now()).Round(time.Millisecond))
		}
		return fmt.Sprintf("node %d: paused %s (%s of term %d, commit %d, applied %d) — sends, receives and applies nothing",
			ns.ID, left, ns.State, ns.Term, ns.Commit, ns.Applied)
	}
	switch ns.State {
	case "leader":
		if ns.Quorum {
			return fmt.Sprintf("node %d: leader of term %d, %d of %d voters reachable — quorum (%d) holds, commit index %d",
				ns.ID, ns.Term, r, n, q, ns.Commit)
		}
		return fmt.Sprintf("node %d: leader of term %d but only %d of %d voters reachable — no quorum, commit index frozen at %d; it steps down within the leader lease",
			ns.ID, ns.Term, r, n, ns.Commit)
	case "follower":
		if ns.Leader != 0 && !ns.Quorum {
			return fmt.Sprintf("node %d: follower in term %d, still believes node %d leads, but reaches only %d of %d voters — it will stand for election and fail (needs %d); writes here fail",
				ns.ID, ns.Term, ns.Leader, r, n, q)
		}
		if ns.Leader != 0 && !contains(ns.Reachable, ns.Leader) {
			return fmt.Sprintf("node %d: follower in term %d, still believes node %d leads but cannot reach it; %d of %d voters reachable — they elect a new leader after the heartbeat timeout",
				ns.ID, ns.Term, ns.Leader, r, n)
		}
		if ns.Leader != 0 {
			return fmt.Sprintf("node %d: follower in term %d of leader %d, commit %d, applied %d",
				ns.ID, ns.Term, ns.Leader, ns.Commit, ns.Applied)
		}
		if ns.Quorum {
			return fmt.Sprintf("node %d: follower in term %d, no leader known; %d of %d voters reachable — an election can succeed",
				ns.ID, ns.Term, r, n)
		}
		return fmt.Sprintf("node %d: follower in term %d, no leader known; only %d of %d voters reachable — cannot elect a leader (needs %d), writes here fail",
			ns.ID, ns.Term, r, n, q)
	case "candidate":
		if ns.Quorum {
			return fmt.Sprintf("node %d: candidate in term %d; %d of %d voters reachable — can win", ns.ID, ns.Term, r, n)
		}
		return fmt.Sprintf("node %d: candidate in term %d; only %d of %d voters reachable — cannot win (needs %d)", ns.ID, ns.Term, r, n, q)
	}
	return fmt.Sprintf("node %d: %s in term %d", ns.ID, ns.State, ns.Term)
}

func (c *Cluster) summary(st Status) string {
	if st.Leader == 0 {
		return fmt.Sprintf("no leader: writes and linearizable reads are unavailable (a leader needs %d of %d voters)", st.Quorum, c.cfg.Nodes)
	}
	for _, ns := range st.Nodes {
		if ns.ID == st.Leader && !ns.Quorum {
			return fmt.Sprintf("leader %d of term %d has no quorum: writes will fail, commit index frozen at %d", st.Leader, st.Term, ns.Commit)
		}
		if ns.ID == st.Leader && ns.Paused {
			return fmt.Sprintf("leader %d of term %d is paused: writes wait; the others elect a new leader if they can", st.Leader, st.Term)
		}
	}
	return fmt.Sprintf("leader %d of term %d with a quorum: writes and linearizable reads available", st.Leader, st.Term)
}

// WriteSimple writes the status as text.
func (st Status) WriteSimple(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", st.Summary)
	fmt.Fprintf(&b, "%-4s %-14s %5s %7s %7s  %s\n", "NODE", "STATE", "TERM", "COMMIT", "APPLIED", "REACHES")
	for _, ns := range st.Nodes {
		state := ns.State
		if ns.Paused {
			state += "(paused)"
		}
		ids := make([]string, len(ns.Reachable))
		for i, r := range ns.Reachable {
			ids[i] = r.String()
		}
		if !ns.Up {
			state = "down"
		}
		fmt.Fprintf(&b, "%-4d %-14s %5d %7d %7d  %s\n", ns.ID, state, ns.Term, ns.Commit, ns.Applied, strings.Join(ids, ","))
	}
	for _, ns := range st.Nodes {
		fmt.Fprintf(&b, "  %s\n", ns.Explain)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func contains(ids []NodeID, id NodeID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
