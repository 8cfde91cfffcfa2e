package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"slices"
	"strconv"
	"time"

	"github.com/coordkit/coordkit/cluster"
)

// ElectionConfig is one point of the election-time experiment, the Raft
// paper's Figure 16 (Ongaro & Ousterhout, USENIX ATC 2014, §9.3): crash the
// leader of a five-node cluster and time how long the cluster is without a
// leader everyone agrees on.
type ElectionConfig struct {
	// Nodes is the cluster size (the paper: 5).
	Nodes int
	// Timeout is T, hashicorp/raft's HeartbeatTimeout and ElectionTimeout:
	// a follower stands for election once it has heard nothing for T, and
	// the library draws its timers from [T, 2T). The leader sends
	// heartbeats every T/10 (randomised up to T/5); the lease is T.
	Timeout time.Duration
	// OneWay is every link's one-way delay; the broadcast time (send to
	// every follower, hear back) is about twice it.
	OneWay time.Duration
	// PreVote keeps hashicorp/raft's pre-vote round on (the library's default).
	PreVote bool
	// Lagging is how many followers are made to miss the last entry before
	// each crash, so they cannot win (the paper's "different log lengths").
	// At most Nodes minus a quorum can lag, or the entry could not commit.
	Lagging int
	// Settle is how long the leader must stay the same, with every node
	// agreeing and caught up, before a crash. Zero: 2T.
	Settle time.Duration
	// Seed fixes the network's randomness; each trial's own seed fixes its
	// choices (which followers lag, where in the heartbeat interval the
	// crash lands).
	Seed int64
	// LogOutput receives Raft's warnings; nil discards them.
	LogOutput io.Writer
}

// DefaultElectionConfig is the paper's setting: 5 nodes, a broadcast time of
// about 15 ms, two followers behind, pre-vote on, T = 150 ms.
func DefaultElectionConfig() ElectionConfig {
	return ElectionConfig{Nodes: 5, Timeout: 150 * time.Millisecond, OneWay: 7500 * time.Microsecond, PreVote: true, Lagging: 2, Seed: 1}
}

// Validate reports the first problem with c, or nil.
func (c ElectionConfig) Validate() error {
	switch {
	case c.Nodes < 3 || c.Nodes > cluster.MaxNodes:
		return fmt.Errorf("%w: election experiment: nodes must be 3 to %d, got %d", ErrInvalid, cluster.MaxNodes, c.Nodes)
	case c.Timeout < 5*time.Millisecond:
		return fmt.Errorf("%w: election experiment: timeout %s below raft's 5ms floor", ErrInvalid, c.Timeout)
	case c.OneWay < 0:
		return fmt.Errorf("%w: election experiment: negative delay", ErrInvalid)
	case c.Lagging < 0 || c.Lagging > c.Nodes-(c.Nodes/2+1):
		return fmt.Errorf("%w: election experiment: %d lagging followers of %d nodes: at most %d, or the last entry cannot commit", ErrInvalid, c.Lagging, c.Nodes, c.Nodes-(c.Nodes/2+1))
	case c.Settle < 0:
		return fmt.Errorf("%w: election experiment: negative settle time", ErrInvalid)
	}
	return nil
}

func (c ElectionConfig) settle() time.Duration {
	if c.Settle > 0 {
		return c.Settle
	}
	return 2 * c.Timeout
}

// HeartbeatInterval is hashicorp/raft's nominal heartbeat interval, T/10.
func (c ElectionConfig) HeartbeatInterval() time.Duration { return c.Timeout / 10 }

// ElectionTrial is what one crash measured.
type ElectionTrial struct {
	// Downtime runs from the crash until every surviving node reports the
	// same new leader.
	Downtime time.Duration
	// CrashOffset is where in the heartbeat interval the crash landed,
	// counted from the commit of the last entry (the synchronised broadcast).
	CrashOffset time.Duration
	// Broadcast is how long the last entry took to commit: one broadcast
	// round, the paper's "broadcast time".
	Broadcast time.Duration
	// Elections is how many terms the survivors went through (1: the first
	// election won; more: split votes or failed rounds).
	Elections int
	// Crashed and Winner are the old and new leader; WinnerUpToDate says
	// the winner had the last entry (it must: the election restriction).
	Crashed, Winner cluster.NodeID
	WinnerUpToDate  bool
	// Churn counts leader changes nobody caused while the lab waited for a
	// stable leader before this crash: the timing requirement
	// (broadcast time << election timeout) failing.
	Churn int
	// SettleWait is how long that wait took.
	SettleWait time.Duration
}

// Metrics returns the trial as named numbers (milliseconds for times).
func (t ElectionTrial) Metrics() map[string]float64 {
	b := 0.0
	if t.WinnerUpToDate {
		b = 1
	}
	return map[string]float64{
		"downtime_ms":       cluster.Ms(t.Downtime),
		"crash_offset_ms":   cluster.Ms(t.CrashOffset),
		"broadcast_ms":      cluster.Ms(t.Broadcast),
		"elections":         float64(t.Elections),
		"winner_up_to_date": b,
		"churn":             float64(t.Churn),
		"settle_wait_ms":    cluster.Ms(t.SettleWait),
	}
}

// ElectionLab is one cluster on which election trials run one after the
// other, as the paper crashed the leader of one cluster repeatedly: each
// trial restarts the node the previous one crashed and waits for a stable,
// caught-up cluster first.
type ElectionLab struct {
	cfg     ElectionConfig
	c       *cluster.Cluster
	crashed cluster.NodeID
	n       int
	// unsettled counts the trials in a row that found no stable leader.
	unsettled int
}

// giveUpAfter is how many trials in a row may find no stable leader before
// the lab stops trying: a setting that violates the timing requirement
// (a vote's round trip longer than T) never settles, and each attempt
// costs settleLimit.
const giveUpAfter = 3

// NewElectionLab starts the cluster for cfg.
func NewElectionLab(ctx context.Context, cfg ElectionConfig) (*ElectionLab, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cc := cluster.DefaultConfig()
	cc.Nodes = cfg.Nodes
	cc.Seed = cfg.Seed
	cc.Link = cluster.LinkConfig{Delay: cfg.OneWay}
	cc.ScaleTimeouts = false
	cc.PreVoteDisabled = !cfg.PreVote
	cc.Timing = cluster.Timing{Heartbeat: cfg.Timeout, Election: cfg.Timeout, LeaderLease: cfg.Timeout,
		Commit: max(cfg.Timeout/10, time.Millisecond), RPC: max(10*cfg.Timeout, 500*time.Millisecond)}
	cc.SampleInterval = 0
	cc.OpTimeout = max(40*cfg.Timeout, 5*time.Second)
	cc.LogOutput = cfg.LogOutput
	c, err := cluster.New(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("election experiment: %w", err)
	}
	return &ElectionLab{cfg: cfg, c: c}, nil
}

// Close stops the cluster.
func (l *ElectionLab) Close() error { l.c.Close(); return nil }

// TrialMetrics runs Trial and returns its metrics: the shape the sweep
// runner drives.
func (l *ElectionLab) TrialMetrics(ctx context.Context, seed int64) (map[string]float64, error) {
	t, err := l.Trial(ctx, seed)
	if err != nil {
		return nil, err
	}
	return t.Metrics(), nil
}

// Why a trial could not measure.
var (
	// errUnsettled: the cluster did not settle on one leader in time.
	errUnsettled = errors.New("no stable leader")
	// errMoved: leadership moved on its own between the settle and the crash.
	errMoved = errors.New("leadership moved before the crash")
)

// Trial crashes the leader once and measures the downtime:
//
//  1. the node the last trial crashed restarts; wait until every node
//     agrees on one leader in one term for the settle time and all logs
//     are equal;
//  2. Lagging followers (chosen by seed) start dropping entries while
//     still receiving heartbeats; one write commits through the others;
//  3. at a point drawn uniformly from [0, T/10) after that commit, the
//     leader crashes;
//  4. the clock stops when every survivor names the same new leader.
func (l *ElectionLab) Trial(ctx context.Context, seed int64) (ElectionTrial, error) {
	var t ElectionTrial
	rng := rand.New(rand.NewSource(seed))
	c := l.c
	if l.crashed != 0 {
		if err := c.Restart(l.crashed); err != nil {
			return t, err
		}
		l.crashed = 0
	}
	if l.unsettled >= giveUpAfter {
		return t, fmt.Errorf("election trial: not tried: the last %d trials found %w within %s each", l.unsettled, errUnsettled, l.settleLimit())
	}
	settleStart := time.Now()
	leader, churn, err := l.waitStable(ctx)
	t.SettleWait, t.Churn = time.Since(settleStart), churn
	if errors.Is(err, errUnsettled) {
		l.unsettled++
	}
	if err != nil {
		return t, err
	}
	l.unsettled = 0
	var followers []cluster.NodeID
	for i := 1; i <= l.cfg.Nodes; i++ {
		if id := cluster.NodeID(i); id != leader {
			followers = append(followers, id)
		}
	}
	rng.Shuffle(len(followers), func(i, j int) { followers[i], followers[j] = followers[j], followers[i] })
	lagging := followers[:l.cfg.Lagging]
	for _, id := range lagging {
		if err := c.SetLagging(id, true); err != nil {
			return t, err
		}
	}
	defer func() {
		for _, id := range lagging {
			_ = c.SetLagging(id, false)
		}
	}()
	l.n++
	start := time.Now()
	res, err := c.NewClient(leader).Put(ctx, "figure16", strconv.Itoa(l.n))
	if err != nil {
		return t, fmt.Errorf("election trial: the write before the crash: %w", err)
	}
	committed := time.Now()
	if res.Node != leader {
		// The client found another leader: leadership moved while the
		// write was under way, and crashing the old one measures nothing.
		return t, fmt.Errorf("election trial: %w: node %d committed the write, not %d", errMoved, res.Node, leader)
	}
	t.Broadcast = committed.Sub(start)
	term := c.Term(leader)
	offset := time.Duration(rng.Int63n(int64(max(l.cfg.HeartbeatInterval(), 1))))
	cluster.Sleep(ctx, time.Until(committed.Add(offset)))
	if err := ctx.Err(); err != nil {
		return t, err
	}
	if c.LeaderOf(leader) != leader || c.Term(leader) != term {
		return t, fmt.Errorf("election trial: %w: node %d stepped down (term %d) before it could be crashed", errMoved, leader, c.Term(leader))
	}
	crashAt := time.Now()
	t.CrashOffset, t.Crashed = crashAt.Sub(committed), leader
	crashed := make(chan error, 1)
	go func() {
		err := c.Crash(leader)
		// The logs differ now; the new leader must reach everyone, or its
		// first AppendEntries to a lagging node would wait out an RPC timeout.
		for _, id := range lagging {
			_ = c.SetLagging(id, false)
		}
		crashed <- err
	}()
	l.crashed = leader
	winner, at, err := l.waitAgreed(ctx, leader, followers)
	cerr := <-crashed
	if err != nil {
		return t, err
	}
	if cerr != nil {
		return t, cerr
	}
	// Restart at once: the new leader's replication to the dead node backs
	// off with every failed attempt (hashicorp/raft doubles the wait up to
	// tens of seconds), so a later restart would make the next trial wait
	// for that backoff before the node catches up.
	if err := c.Restart(leader); err != nil {
		return t, err
	}
	l.crashed = 0
	t.Downtime, t.Winner = at.Sub(crashAt), winner
	t.WinnerUpToDate = !slices.Contains(lagging, winner)
	var top uint64
	for _, id := range followers {
		top = max(top, c.Term(id))
	}
	t.Elections = int(top - term)
	if t.Elections < 1 {
		// No new term: the winner was elected before the crash.
		return t, fmt.Errorf("election trial: %w: node %d led in term %d before the crash", errMoved, winner, top)
	}
	return t, nil
}

// settleLimit bounds one wait for a stable leader.
func (l *ElectionLab) settleLimit() time.Duration { return max(200*l.cfg.Timeout, 10*time.Second) }

// waitStable waits until every node names the same leader in one term for
// the settle time with equal last indexes, counting leader changes seen
// meanwhile.
func (l *ElectionLab) waitStable(ctx context.Context) (cluster.NodeID, int, error) {
	c := l.c
	start := time.Now()
	deadline := start.Add(l.settleLimit())
	var since time.Time
	var cur cluster.NodeID
	var curTerm uint64
	churn := 0
	for {
		leader, term := c.Leader()
		agreed := leader != 0
		if agreed {
			li, err := c.LastIndex(leader)
			agreed = err == nil
			for i := 1; i <= l.cfg.Nodes && agreed; i++ {
				id := cluster.NodeID(i)
				idx, err := c.LastIndex(id)
				agreed = err == nil && c.LeaderOf(id) == leader && idx == li
			}
		}
		switch {
		case !agreed:
			since = time.Time{}
		case leader != cur || term != curTerm:
			if cur != 0 {
				churn++
			}
			cur, curTerm, since = leader, term, time.Now()
		case time.Since(since) >= l.cfg.settle():
			return leader, churn, nil
		}
		if time.Now().After(deadline) {
			return 0, churn, fmt.Errorf("election trial: %w after %s (%d leader changes)", errUnsettled, time.Since(start).Round(time.Millisecond), churn)
		}
		cluster.Sleep(ctx, time.Millisecond)
		if err := ctx.Err(); err != nil {
			return 0, churn, err
		}
	}
}

// waitAgreed polls the survivors until all name the same leader other than
// old, and returns it with the time it was first seen.
func (l *ElectionLab) waitAgreed(ctx context.Context, old cluster.NodeID, survivors []cluster.NodeID) (cluster.NodeID, time.Time, error) {
	deadline := time.Now().Add(max(400*l.cfg.Timeout, 60*time.Second))
	for {
		first := l.c.LeaderOf(survivors[0])
		ok := first != 0 && first != old
		for _, id := range survivors[1:] {
			ok = ok && l.c.LeaderOf(id) == first
		}
		now := time.Now()
		if ok {
			return first, now, nil
		}
		if now.After(deadline) {
			return 0, now, fmt.Errorf("election trial: no leader agreed %s after the crash of %d", now.Sub(deadline.Add(-max(400*l.cfg.Timeout, 60*time.Second))).Round(time.Millisecond), old)
		}
		if err := ctx.Err(); err != nil {
			return 0, now, err
		}
		// A quarter of a millisecond: fine enough against downtimes of
		// tens of milliseconds, cheap enough not to load the machine.
		time.Sleep(250 * time.Microsecond)
	}
}
