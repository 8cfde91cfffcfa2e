package cluster

import (
	"fmt"
	"io"
	"strconv"
	"time"
)

// NodeID numbers the nodes of a lab cluster from 1 to N.
type NodeID int

func (id NodeID) String() string { return strconv.Itoa(int(id)) }

// MaxNodes is the largest cluster the lab runs.
const MaxNodes = 7

// Storage selects how a node persists its Raft log and state.
type Storage string

const (
	// StorageMem keeps the log in memory. It survives a crash of the node
	// (the lab keeps the store) but not the process.
	StorageMem Storage = "mem"
	// StorageDisk writes the log to a bolt database with fsync, as a real
	// deployment would.
	StorageDisk Storage = "disk"
	// StorageSimFsync keeps the log in memory but sleeps Config.FsyncLatency
	// on every log append and state update, to show what durability costs
	// on a disk of that speed.
	StorageSimFsync Storage = "simfsync"
)

// Clock is the lab's source of time for decisions: history timestamps,
// pause deadlines, client backoff. Network delays use real time regardless,
// because the lab exists to measure them.
//
// It is deliberately not session.Clock: importing session for one interface
// would link etcd's client into every user of the lab, which has nothing to
// do with etcd leases. The shapes differ too: the lab only ever waits once
// for a fixed time (After), while session re-arms and stops a deadline timer
// (NewTimer), so one interface would give each side a method it never uses.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// RealClock is the wall clock (with its monotonic reading).
func RealClock() Clock { return realClock{} }

// Timing holds Raft's timeouts. Zero fields take the defaults of DefaultConfig.
type Timing struct {
	// Heartbeat is how long a follower waits without hearing from a leader
	// before it stands for election (randomised up to twice this). The
	// leader sends heartbeats ten times as often.
	Heartbeat time.Duration
	// Election is how long a candidate waits for votes (randomised up to twice this).
	Election time.Duration
	// LeaderLease is how long a leader stays leader without hearing from a
	// quorum. Must not exceed Heartbeat: that is what makes the lease safe
	// when clocks run at the same rate and processes do not pause.
	LeaderLease time.Duration
	// Commit is the longest the leader waits before telling followers the
	// new commit index when there is nothing else to send.
	Commit time.Duration
	// RPC bounds one Raft RPC over the simulated network (a message that is
	// dropped or cut costs this much before the sender gives up).
	RPC time.Duration
}

// Config describes a lab cluster.
type Config struct {
	// Nodes is the number of voters, 1 to 7.
	Nodes int
	// Link applies to every directed link at start; change links later
	// with SetLink, Cut, Partition and Heal.
	Link LinkConfig
	// Storage is mem, disk or simfsync.
	Storage Storage
	// FsyncLatency is the simulated fsync cost of StorageSimFsync.
	FsyncLatency time.Duration
	// DataDir holds the bolt files of StorageDisk. Empty: a temporary
	// directory removed by Close.
	DataDir string
	// Seed fixes the network's jitter and loss, the client's choices and the
	// generated workloads, so a run can be replayed.
	Seed int64
	// Timing is Raft's timeouts. With ScaleTimeouts, 4x the one-way delay
	// (delay plus jitter) of Link is added to Heartbeat, Election and RPC
	// and 3x to LeaderLease, so that a cluster with 20-50 ms links still
	// elects a stable leader; with StorageSimFsync, 4x the fsync latency
	// is added too (6x to Election: a vote costs several fsyncs).
	Timing        Timing
	ScaleTimeouts bool
	// PreVoteDisabled turns off Raft's pre-vote round (hashicorp/raft
	// v1.7+ has it on by default): a node that times out then stands for
	// election at once, raising its term, instead of first asking whether
	// it could win.
	PreVoteDisabled bool
	// OpTimeout bounds one client operation: it fails (or ends unknown)
	// within it, never hangs.
	OpTimeout time.Duration
	// SnapshotThreshold and TrailingLogs are passed to Raft; lower them to
	// see InstallSnapshot at work. Zero: Raft's defaults.
	SnapshotThreshold uint64
	TrailingLogs      uint64
	// SnapshotInterval is how often Raft checks whether to snapshot (zero:
	// Raft's default, two minutes).
	SnapshotInterval time.Duration
	// SampleInterval is how often the timeline records each node's commit
	// and applied index; zero disables sampling (leader changes, faults and
	// operations are always recorded).
	SampleInterval time.Duration
	// NoPipeline makes the transport refuse AppendEntriesPipeline
	// (raft.ErrPipelineReplicationNotSupported), so the leader waits for each
	// AppendEntries to a follower before sending the next: see what
	// pipelining buys on slow links.
	NoPipeline bool
	// TimelineIndexSamples bounds the index samples the timeline keeps:
	// beyond it the older half is forgotten (leader changes, faults and
	// heals are always kept). Zero: no bound.
	TimelineIndexSamples int
	// HistoryInMemory bounds the client operations the history keeps in
	// memory (rounded up to chunks of 4096); older ones spill to a
	// temporary file that Close removes, and History reads them back.
	// Zero: everything stays in memory.
	HistoryInMemory int
	// Clock is the time source for decisions; nil is the real clock.
	Clock Clock
	// LogOutput receives Raft's own log (warnings and errors). Nil: discarded.
	LogOutput io.Writer
}

// DefaultConfig is a three-node in-memory cluster with fast but sane timeouts.
func DefaultConfig() Config {
	return Config{
		Nodes:   3,
		Storage: StorageMem,
		Timing: Timing{
			Heartbeat:   100 * time.Millisecond,
			Election:    150 * time.Millisecond,
			LeaderLease: 75 * time.Millisecond,
			Commit:      20 * time.Millisecond,
			RPC:         500 * time.Millisecond,
		},
		ScaleTimeouts:  true,
		OpTimeout:      2 * time.Second,
		SampleInterval: 50 * time.Millisecond,
		Seed:           1,
	}
}

// DefaultSessionConfig is DefaultConfig bounded in memory for a session
// that runs for minutes or hours, a write load and all (coordctl lab; see
// docs/lab.md, "Memory"): the history keeps 65,536 operations in memory
// and spills older ones to a temporary file; Raft snapshots (and so
// truncates its in-memory log) every 5s once 8192 entries have piled up,
// instead of every two minutes; the timeline keeps 50,000 index samples
// (about eight minutes of five nodes under a load) and thins the older.
func DefaultSessionConfig() Config {
	c := DefaultConfig()
	c.HistoryInMemory = 1 << 16
	c.SnapshotInterval = 5 * time.Second
	c.TimelineIndexSamples = 50000
	return c
}

// Validate reports the first problem with c, or nil.
func (c Config) Validate() error {
	if c.Nodes < 1 || c.Nodes > MaxNodes {
		return fmt.Errorf("%w: nodes must be 1 to %d, got %d", ErrInvalidConfig, MaxNodes, c.Nodes)
	}
	if err := c.Link.validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	switch c.Storage {
	case StorageMem, StorageDisk:
	case StorageSimFsync:
		if c.FsyncLatency < 0 {
			return fmt.Errorf("%w: negative fsync latency", ErrInvalidConfig)
		}
	case "":
		return fmt.Errorf("%w: storage not set (mem, disk or simfsync)", ErrInvalidConfig)
	default:
		return fmt.Errorf("%w: unknown storage %q (want mem, disk or simfsync)", ErrInvalidConfig, c.Storage)
	}
	t := c.timing()
	if t.Heartbeat < 5*time.Millisecond || t.Election < 5*time.Millisecond || t.LeaderLease < 5*time.Millisecond {
		return fmt.Errorf("%w: raft timeouts must be at least 5ms", ErrInvalidConfig)
	}
	if t.LeaderLease > t.Heartbeat {
		return fmt.Errorf("%w: leader lease %s longer than heartbeat timeout %s", ErrInvalidConfig, t.LeaderLease, t.Heartbeat)
	}
	if t.Election < t.Heartbeat {
		return fmt.Errorf("%w: election timeout %s shorter than heartbeat timeout %s", ErrInvalidConfig, t.Election, t.Heartbeat)
	}
	if c.OpTimeout <= 0 {
		return fmt.Errorf("%w: op timeout must be positive", ErrInvalidConfig)
	}
	if c.SampleInterval < 0 {
		return fmt.Errorf("%w: negative sample interval", ErrInvalidConfig)
	}
	if c.HistoryInMemory < 0 || c.TimelineIndexSamples < 0 {
		return fmt.Errorf("%w: negative history or timeline limit", ErrInvalidConfig)
	}
	return nil
}

// timing returns the effective timeouts: defaults filled in, scaled by delay.
func (c Config) timing() Timing {
	d := DefaultConfig().Timing
	t := c.Timing
	if t.Heartbeat == 0 {
		t.Heartbeat = d.Heartbeat
	}
	if t.Election == 0 {
		t.Election = d.Election
	}
	if t.LeaderLease == 0 {
		t.LeaderLease = d.LeaderLease
	}
	if t.Commit == 0 {
		t.Commit = d.Commit
	}
	if t.RPC == 0 {
		t.RPC = d.RPC
	}
	if c.ScaleTimeouts {
		m := c.Link.Delay + c.Link.Jitter
		// An election persists a term and a vote on the candidate and on
		// each voter: with a slow disk that takes several fsyncs.
		var f time.Duration
		if c.Storage == StorageSimFsync {
			f = c.FsyncLatency
		}
		t.Heartbeat += 4*m + 4*f
		t.Election += 4*m + 6*f
		t.LeaderLease += 3*m + 3*f
		t.RPC += 4*m + 4*f
	}
	return t
}

// EffectiveTiming returns the Raft timeouts the cluster runs with.
func (c Config) EffectiveTiming() Timing { return c.timing() }

func (c Config) clock() Clock {
	if c.Clock == nil {
		return realClock{}
	}
	return c.Clock
}
