package cluster

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Cluster is a lab cluster: N hashicorp/raft nodes in this process joined by
// a simulated network. Its methods are safe for concurrent use.
type Cluster struct {
	cfg    Config
	timing Timing
	clock  Clock
	start  time.Time

	nw    *network
	eps   *endpoints
	dir   string
	owned bool

	mu    sync.Mutex // node lifecycle: crash, restart, pause
	nodes []*node    // 1-based

	hist     *history
	timeline *timeline

	rngMu   sync.Mutex
	rng     *rand.Rand
	clients atomic.Int64

	done   chan struct{}
	closed atomic.Bool
	wg     sync.WaitGroup
}

// New starts a cluster and waits, within ctx, until it has a leader.
func New(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Cluster{
		cfg:    cfg,
		timing: cfg.timing(),
		clock:  cfg.clock(),
		hist:   &history{inMemory: cfg.HistoryInMemory},
		rng:    rand.New(rand.NewSource(cfg.Seed ^ 0x5eed)),
		done:   make(chan struct{}),
	}
	c.start = c.clock.Now()
	c.timeline = &timeline{now: c.nowNs, maxIndex: cfg.TimelineIndexSamples}
	if cfg.Storage == StorageDisk && cfg.DataDir != "" {
		// A store made with another --nodes would start a cluster that
		// never agrees with itself: its nodes' configurations name others.
		n, err := StoredNodes(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		if n != 0 && n != cfg.Nodes {
			return nil, fmt.Errorf("%w: data dir %s holds a %d-node cluster, not %d: start it with %d nodes, or use another data dir", ErrInvalidConfig, cfg.DataDir, n, cfg.Nodes, n)
		}
	}
	if cfg.Storage == StorageDisk {
		c.dir = cfg.DataDir
		if c.dir == "" {
			d, err := os.MkdirTemp("", "coordkit-lab-")
			if err != nil {
				return nil, fmt.Errorf("cluster: data dir: %w", err)
			}
			c.dir, c.owned = d, true
		}
	}
	c.nw = newNetwork(cfg.Nodes, cfg.Link, cfg.Seed)
	c.eps = &endpoints{t: make([]atomic.Pointer[simTransport], cfg.Nodes+1)}
	c.nodes = make([]*node, cfg.Nodes+1)
	c.mu.Lock()
	for i := 1; i <= cfg.Nodes; i++ {
		st, err := openStore(cfg, c.dir, NodeID(i))
		if err == nil {
			c.nodes[i] = &node{id: NodeID(i), store: st}
			err = c.startNode(c.nodes[i])
		}
		if err != nil {
			c.mu.Unlock()
			c.Close()
			return nil, err
		}
	}
	c.mu.Unlock()
	if cfg.SampleInterval > 0 {
		c.wg.Add(1)
		go c.sample()
	}
	if _, err := c.WaitLeader(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close stops every node and the network. It is safe to call twice.
func (c *Cluster) Close() {
	if c.closed.Swap(true) {
		return
	}
	close(c.done)
	c.wg.Wait()
	c.mu.Lock()
	for _, n := range c.nodes {
		if n != nil {
			c.stopNode(n)
		}
	}
	c.mu.Unlock()
	c.nw.close()
	c.hist.mu.Lock()
	c.hist.removeSpill()
	c.hist.mu.Unlock()
	for _, n := range c.nodes {
		if n != nil {
			n.store.release()
		}
	}
	if c.owned {
		_ = os.RemoveAll(c.dir)
	}
}

// Config returns the configuration the cluster was started with.
func (c *Cluster) Config() Config { return c.cfg }

// Timing returns the Raft timeouts in force (after scaling).
func (c *Cluster) Timing() Timing { return c.timing }

// Size is the number of nodes.
func (c *Cluster) Size() int { return c.cfg.Nodes }

// Now is the time since the cluster started on its clock, in nanoseconds:
// the time base of the history and the timeline.
func (c *Cluster) Now() int64 { return c.nowNs() }

func (c *Cluster) nowNs() int64 { return int64(c.clock.Now().Sub(c.start)) }

func (c *Cluster) check(id NodeID) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if id < 1 || int(id) > c.cfg.Nodes {
		return fmt.Errorf("%w: %d (nodes are 1 to %d)", ErrUnknownNode, id, c.cfg.Nodes)
	}
	return nil
}

// current returns the running incarnation of id, or nil.
func (c *Cluster) current(id NodeID) *incarnation {
	if id < 1 || int(id) > c.cfg.Nodes {
		return nil
	}
	return c.nodes[id].inc.Load()
}

// Leader returns the node that is leader in the highest term, or 0.
func (c *Cluster) Leader() (NodeID, uint64) {
	var best NodeID
	var bestTerm uint64
	for i := 1; i <= c.cfg.Nodes; i++ {
		inc := c.current(NodeID(i))
		if inc == nil {
			continue
		}
		if inc.raft.State() == raft.Leader {
			if t := inc.raft.CurrentTerm(); t >= bestTerm {
				best, bestTerm = NodeID(i), t
			}
		}
	}
	return best, bestTerm
}

// WaitLeader waits until some node is leader with a quorum reachable, or
// ctx ends.
func (c *Cluster) WaitLeader(ctx context.Context) (NodeID, error) {
	for {
		if id, _ := c.Leader(); id != 0 && c.reachableVoters(id) >= c.quorum() {
			if p, _ := c.current(id).isPaused(); !p {
				return id, nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("cluster: no leader: %w", ctx.Err())
		case <-c.done:
			return 0, ErrClosed
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// WaitNewLeader waits for a leader other than old (in a later term).
func (c *Cluster) WaitNewLeader(ctx context.Context, old NodeID) (NodeID, error) {
	for {
		if id, _ := c.Leader(); id != 0 && id != old && c.reachableVoters(id) >= c.quorum() {
			return id, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("cluster: no new leader: %w", ctx.Err())
		case <-c.done:
			return 0, ErrClosed
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// WaitApplied waits until every running node's state machine has applied
// every command up to index.
func (c *Cluster) WaitApplied(ctx context.Context, index uint64) error {
	for i := 1; i <= c.cfg.Nodes; i++ {
		inc := c.current(NodeID(i))
		if inc == nil {
			continue
		}
		for inc.raft.AppliedIndex() < index {
			select {
			case <-ctx.Done():
				return fmt.Errorf("cluster: node %d did not apply %d: %w", i, index, ctx.Err())
			case <-inc.stop:
				return fmt.Errorf("cluster: node %d: %w", i, ErrNodeDown)
			case <-time.After(time.Millisecond):
			}
		}
		if !inc.fsm.waitApplied(lastCommandAtOrBefore(inc, index), ctx.Done()) {
			return fmt.Errorf("cluster: node %d did not apply %d: %w", i, index, ctx.Err())
		}
	}
	return nil
}

func (c *Cluster) quorum() int { return c.cfg.Nodes/2 + 1 }

func (c *Cluster) fault(kind EventKind, format string, args ...any) {
	c.timeline.add(Event{Kind: kind, Detail: fmt.Sprintf(format, args...)})
}

// SetLink replaces the state of the directed link from→to.
func (c *Cluster) SetLink(from, to NodeID, l LinkConfig) error {
	if err := c.checkLink(from, to); err != nil {
		return err
	}
	if err := l.validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	c.nw.setLink(from, to, func(cfg *LinkConfig) { *cfg = l })
	c.fault(EventFault, "link %d→%d: delay %s jitter %s loss %g cut %v", from, to, l.Delay, l.Jitter, l.Loss, l.Cut)
	return nil
}

// Link returns the state of the directed link from→to.
func (c *Cluster) Link(from, to NodeID) LinkConfig { return c.nw.linkConfig(from, to) }

// LinkStats returns what the directed link from→to has carried.
func (c *Cluster) LinkStats(from, to NodeID) LinkStats { return c.nw.linkStats(from, to) }

// Links returns every directed link with its state and what it carried
// (Raft's messages and forwarded client requests alike).
func (c *Cluster) Links() []LinkInfo {
	var out []LinkInfo
	for i := 1; i <= c.cfg.Nodes; i++ {
		for j := 1; j <= c.cfg.Nodes; j++ {
			if i != j {
				from, to := NodeID(i), NodeID(j)
				out = append(out, LinkInfo{From: from, To: to, LinkConfig: c.nw.linkConfig(from, to), LinkStats: c.nw.linkStats(from, to)})
			}
		}
	}
	return out
}

func (c *Cluster) checkLink(from, to NodeID) error {
	if err := c.check(from); err != nil {
		return err
	}
	if err := c.check(to); err != nil {
		return err
	}
	if from == to {
		return fmt.Errorf("%w: link %d→%d: a node has no link to itself", ErrInvalidConfig, from, to)
	}
	return nil
}

// SetDelay sets the one-way delay and jitter of from→to.
func (c *Cluster) SetDelay(from, to NodeID, delay, jitter time.Duration) error {
	if err := c.checkLink(from, to); err != nil {
		return err
	}
	if delay < 0 || jitter < 0 {
		return fmt.Errorf("%w: negative delay", ErrInvalidConfig)
	}
	c.nw.setLink(from, to, func(l *LinkConfig) { l.Delay, l.Jitter = delay, jitter })
	c.fault(EventFault, "delay %d→%d %s±%s", from, to, delay, jitter)
	return nil
}

// Cut drops every message from→to (one way) until Heal.
func (c *Cluster) Cut(from, to NodeID) error {
	if err := c.checkLink(from, to); err != nil {
		return err
	}
	c.nw.setLink(from, to, func(l *LinkConfig) { l.Cut = true })
	c.fault(EventFault, "cut %d→%d", from, to)
	return nil
}

// Partition cuts every link between nodes of different groups, both ways.
// Links between nodes not named are left as they are.
func (c *Cluster) Partition(groups ...[]NodeID) error {
	seen := map[NodeID]int{}
	for gi, g := range groups {
		for _, id := range g {
			if err := c.check(id); err != nil {
				return err
			}
			if _, dup := seen[id]; dup {
				return fmt.Errorf("%w: node %d in two groups", ErrInvalidConfig, id)
			}
			seen[id] = gi
		}
	}
	if len(groups) < 2 {
		return fmt.Errorf("%w: a partition needs at least two groups", ErrInvalidConfig)
	}
	for a, ga := range seen {
		for b, gb := range seen {
			if ga != gb {
				c.nw.setLink(a, b, func(l *LinkConfig) { l.Cut = true })
			}
		}
	}
	c.fault(EventFault, "partition %s", FormatGroups(groups))
	return nil
}

// Isolate cuts id off from every other node, both ways.
func (c *Cluster) Isolate(id NodeID) error {
	if err := c.check(id); err != nil {
		return err
	}
	var rest []NodeID
	for i := 1; i <= c.cfg.Nodes; i++ {
		if NodeID(i) != id {
			rest = append(rest, NodeID(i))
		}
	}
	if len(rest) == 0 {
		return nil
	}
	return c.Partition([]NodeID{id}, rest)
}

// Heal removes every cut; delays, jitter and loss stay.
func (c *Cluster) Heal() {
	c.nw.healAll()
	c.fault(EventHeal, "heal: all cuts removed")
}

// TransferLeadership asks the leader to hand over to another up-to-date
// node (raft's LeadershipTransfer, which ends in a TimeoutNow RPC) and
// waits, within ctx, for the new leader.
func (c *Cluster) TransferLeadership(ctx context.Context) (NodeID, error) {
	old, _ := c.Leader()
	inc := c.current(old)
	if old == 0 || inc == nil {
		return 0, ErrNoLeader
	}
	if err := wait(ctx, inc.raft.LeadershipTransfer(), inc); err != nil {
		return 0, fmt.Errorf("cluster: leadership transfer from %d: %w", old, err)
	}
	c.fault(EventFault, "leadership transfer from %d", old)
	return c.WaitNewLeader(ctx, old)
}

// Crash stops node id as a kill -9 would; what it persisted survives for
// Restart. Pending client operations at it end unknown or failed.
func (c *Cluster) Crash(id NodeID) error {
	if err := c.check(id); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[id]
	if n.inc.Load() == nil {
		return fmt.Errorf("crash node %d: %w", id, ErrNodeDown)
	}
	c.stopNode(n)
	c.fault(EventFault, "crash %d", id)
	return nil
}

// Restart starts a crashed node on its surviving store; it rejoins and
// catches up from the leader.
func (c *Cluster) Restart(id NodeID) error {
	if err := c.check(id); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return ErrClosed
	}
	n := c.nodes[id]
	if n.inc.Load() != nil {
		return fmt.Errorf("restart node %d: %w", id, ErrNodeUp)
	}
	if err := c.startNode(n); err != nil {
		return err
	}
	c.fault(EventHeal, "restart %d", id)
	return nil
}

// Pause freezes node id for d (d <= 0: until Resume): it neither sends,
// receives nor applies, and Raft's own goroutines stop at their next
// message or log line. Requests that reach it wait and are served on
// resume with the state it had — the process-pause hazard.
func (c *Cluster) Pause(id NodeID, d time.Duration) error {
	if err := c.check(id); err != nil {
		return err
	}
	inc := c.current(id)
	if inc == nil {
		return fmt.Errorf("pause node %d: %w", id, ErrNodeDown)
	}
	inc.mu.Lock()
	inc.paused = true
	inc.pauseSeq++
	seq := inc.pauseSeq
	if d > 0 {
		inc.pausedUntil = c.clock.Now().Add(d)
	} else {
		inc.pausedUntil = time.Time{}
	}
	inc.mu.Unlock()
	inc.reqs.pause()
	inc.gate.shut()
	if d > 0 {
		c.fault(EventFault, "pause %d for %s", id, d)
	} else {
		c.fault(EventFault, "pause %d until resumed", id)
	}
	if d > 0 {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			select {
			case <-c.clock.After(d):
				c.resume(inc, seq)
			case <-inc.stop:
			case <-c.done:
				c.resume(inc, seq)
			}
		}()
	}
	return nil
}

// Resume ends a pause of id now.
func (c *Cluster) Resume(id NodeID) error {
	if err := c.check(id); err != nil {
		return err
	}
	inc := c.current(id)
	if inc == nil {
		return fmt.Errorf("resume node %d: %w", id, ErrNodeDown)
	}
	c.resume(inc, 0)
	return nil
}

// resume ends the pause numbered seq (0: any). Queued client requests run
// first, then Raft's goroutines continue.
func (c *Cluster) resume(inc *incarnation, seq int) {
	inc.mu.Lock()
	if !inc.paused || (seq != 0 && seq != inc.pauseSeq) {
		inc.mu.Unlock()
		return
	}
	inc.paused = false
	inc.mu.Unlock()
	inc.reqs.resume()
	inc.gate.open()
	c.fault(EventHeal, "resume %d", inc.id)
}

func (c *Cluster) sample() {
	defer c.wg.Done()
	last := make([][2]uint64, c.cfg.Nodes+1)
	t := time.NewTicker(c.cfg.SampleInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		for i := 1; i <= c.cfg.Nodes; i++ {
			inc := c.current(NodeID(i))
			if inc == nil {
				continue
			}
			ci, ai := inc.raft.CommitIndex(), inc.raft.AppliedIndex()
			if last[i] != [2]uint64{ci, ai} {
				last[i] = [2]uint64{ci, ai}
				c.timeline.add(Event{Kind: EventIndex, Node: NodeID(i), Commit: ci, Applied: ai, Term: inc.raft.CurrentTerm()})
			}
		}
	}
}

// ParseGroups parses a partition spec like "1,2|3,4,5".
func ParseGroups(s string) ([][]NodeID, error) {
	var groups [][]NodeID
	for _, part := range strings.Split(s, "|") {
		var g []NodeID
		for _, f := range strings.Split(part, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			var id int
			if _, err := fmt.Sscanf(f, "%d", &id); err != nil || fmt.Sprint(id) != f {
				return nil, fmt.Errorf("%w: bad node %q in partition %q", ErrInvalidConfig, f, s)
			}
			g = append(g, NodeID(id))
		}
		if len(g) == 0 {
			return nil, fmt.Errorf("%w: empty group in partition %q", ErrInvalidConfig, s)
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// FormatGroups writes groups as ParseGroups reads them.
func FormatGroups(groups [][]NodeID) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		ids := make([]string, len(g))
		for j, id := range g {
			ids[j] = id.String()
		}
		parts[i] = strings.Join(ids, ",")
	}
	return strings.Join(parts, "|")
}
