package cluster

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// node is one member of the lab cluster. Its store outlives crashes; each
// start makes a new incarnation (Raft instance, transport, state machine).
type node struct {
	id     NodeID
	store  *nodeStore
	inc    atomic.Pointer[incarnation] // changed under Cluster.mu; nil while crashed
	booted bool
}

// incarnation is one run of a node, from start to crash.
type incarnation struct {
	id       NodeID
	raft     *raft.Raft
	fsm      *kvFSM
	trans    *simTransport
	logs     raft.LogStore
	gate     *gate // Raft's side of a pause: transport, apply, logging
	reqs     *requestGate
	stop     chan struct{}
	ctx      context.Context // cancelled with stop
	cancel   context.CancelFunc
	observer *raft.Observer
	obsDone  chan struct{}

	mu          sync.Mutex
	paused      bool
	pausedUntil time.Time
	pauseSeq    int
}

func (inc *incarnation) isPaused() (bool, time.Time) {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	return inc.paused, inc.pausedUntil
}

// gateWriter blocks Raft's logging while the node is paused. Raft logs a
// warning just before a leader steps down for want of a quorum; blocking
// it there keeps a paused leader from noticing, as a stopped process
// would not notice, until it resumes.
type gateWriter struct {
	gate *gate
	stop <-chan struct{}
	out  io.Writer
}

func (w *gateWriter) Write(p []byte) (int, error) {
	w.gate.wait(w.stop)
	return w.out.Write(p)
}

func (c *Cluster) raftConfig(id NodeID, out io.Writer) *raft.Config {
	t := c.timing
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(id.String())
	rc.HeartbeatTimeout = t.Heartbeat
	rc.ElectionTimeout = t.Election
	rc.LeaderLeaseTimeout = t.LeaderLease
	rc.CommitTimeout = t.Commit
	rc.PreVoteDisabled = c.cfg.PreVoteDisabled
	if c.cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = c.cfg.SnapshotThreshold
	}
	if c.cfg.SnapshotInterval > 0 {
		rc.SnapshotInterval = c.cfg.SnapshotInterval
	}
	if c.cfg.TrailingLogs > 0 {
		rc.TrailingLogs = c.cfg.TrailingLogs
	}
	if out == nil {
		out = io.Discard
	}
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft-node" + id.String(), Level: hclog.Warn, Output: out})
	return rc
}

// RaftConfig returns the raft.Config a lab node runs with (timeouts
// scaled, logger quiet), for comparing the lab with bare Raft.
func (c Config) RaftConfig(id NodeID) *raft.Config {
	cl := &Cluster{cfg: c, timing: c.timing()}
	return cl.raftConfig(id, c.LogOutput)
}

func (c *Cluster) configuration() raft.Configuration {
	var conf raft.Configuration
	for i := 1; i <= c.cfg.Nodes; i++ {
		conf.Servers = append(conf.Servers, raft.Server{
			Suffrage: raft.Voter, ID: raft.ServerID(NodeID(i).String()), Address: nodeAddr(NodeID(i)),
		})
	}
	return conf
}

// startNode starts a new incarnation of n. Caller holds c.mu.
func (c *Cluster) startNode(n *node) error {
	if err := n.store.reopen(); err != nil {
		return err
	}
	inc := &incarnation{id: n.id, gate: &gate{}, reqs: &requestGate{}, stop: make(chan struct{}), obsDone: make(chan struct{})}
	inc.ctx, inc.cancel = context.WithCancel(context.Background())
	out := c.cfg.LogOutput
	if out == nil {
		out = io.Discard
	}
	rc := c.raftConfig(n.id, &gateWriter{gate: inc.gate, stop: inc.stop, out: out})
	inc.trans = newSimTransport(n.id, c.nw, c.eps, inc.gate, c.timing.RPC)
	inc.trans.noPipe = c.cfg.NoPipeline
	inc.fsm = newKVFSM(inc.gate, inc.stop)
	inc.logs = n.store.logs
	if !n.booted {
		if err := raft.BootstrapCluster(rc, n.store.logs, n.store.stable, n.store.snaps, inc.trans, c.configuration()); err != nil && err != raft.ErrCantBootstrap {
			return fmt.Errorf("cluster: bootstrap node %d: %w", n.id, err)
		}
		n.booted = true
	}
	c.eps.t[n.id].Store(inc.trans)
	r, err := raft.NewRaft(rc, inc.fsm, n.store.logs, n.store.stable, n.store.snaps, inc.trans)
	if err != nil {
		c.eps.t[n.id].Store(nil)
		_ = inc.trans.Close()
		inc.cancel()
		return fmt.Errorf("cluster: start node %d: %w", n.id, err)
	}
	inc.raft = r
	ch := make(chan raft.Observation, 64)
	inc.observer = raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.LeaderObservation, raft.RaftState:
			return true
		}
		return false
	})
	r.RegisterObserver(inc.observer)
	go c.observe(inc, ch)
	n.inc.Store(inc)
	return nil
}

func (c *Cluster) observe(inc *incarnation, ch chan raft.Observation) {
	defer close(inc.obsDone)
	for {
		select {
		case o := <-ch:
			switch d := o.Data.(type) {
			case raft.LeaderObservation:
				lid, _ := addrNode(d.LeaderAddr)
				c.timeline.add(Event{Kind: EventLeader, Node: inc.id, Leader: lid, Term: inc.raft.CurrentTerm()})
			case raft.RaftState:
				c.timeline.add(Event{Kind: EventState, Node: inc.id, State: d.String(), Term: inc.raft.CurrentTerm()})
			}
		case <-inc.stop:
			return
		}
	}
}

// stopNode kills the incarnation: the process dies, its store stays.
// Caller holds c.mu.
func (c *Cluster) stopNode(n *node) {
	inc := n.inc.Load()
	if inc == nil {
		return
	}
	n.inc.Store(nil)
	c.eps.t[n.id].Store(nil)
	_ = inc.trans.Close()
	close(inc.stop)
	inc.cancel()
	inc.reqs.drop()
	inc.gate.open()
	_ = inc.raft.Shutdown().Error()
	inc.raft.DeregisterObserver(inc.observer)
	<-inc.obsDone
	n.store.release()
}
