package labbench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/coordkit/coordkit/cluster"
)

// Row is one throughput comparison.
type Row struct {
	Metric   string  `json:"metric"`
	Lab      float64 `json:"lab"`
	BareRaft float64 `json:"bare_raft"`
	Unit     string  `json:"unit"`
}

// Ratio is lab / bare raft.
func (r Row) Ratio() float64 {
	if r.BareRaft == 0 {
		return 0
	}
	return r.Lab / r.BareRaft
}

// ThroughputOptions bound a throughput run.
type ThroughputOptions struct {
	Nodes      []int         // node counts, e.g. 3 and 5
	Writers    []int         // concurrent writers, e.g. 1 and 64
	Duration   time.Duration // per measurement
	Seed       int64
	OnProgress func(string)
}

// Throughput measures lab and bare raft write throughput for every node
// count and writer count. Both systems run side by side and are measured
// in alternating slices, so a noisy neighbour slows both alike.
func Throughput(ctx context.Context, o ThroughputOptions) ([]Row, error) {
	var rows []Row
	for _, n := range o.Nodes {
		if o.OnProgress != nil {
			o.OnProgress(fmt.Sprintf("%d nodes: starting lab and bare raft", n))
		}
		lab, err := startLab(ctx, n, o.Seed)
		if err != nil {
			return rows, err
		}
		bare, err := startBare(n)
		if err != nil {
			lab.close()
			return rows, err
		}
		for _, w := range o.Writers {
			name := fmt.Sprintf("n%d_concurrent%d_writes_per_s", n, w)
			if w == 1 {
				name = fmt.Sprintf("n%d_sequential_writes_per_s", n)
			}
			if o.OnProgress != nil {
				o.OnProgress(name)
			}
			l, b := compare(ctx, lab, bare, w, o.Duration)
			rows = append(rows, Row{Metric: name, Lab: l, BareRaft: b, Unit: "writes/s"})
		}
		lab.close()
		bare.close()
	}
	return rows, nil
}

// slice is how long each system runs before the other takes a turn.
const slice = 250 * time.Millisecond

func compare(ctx context.Context, lab, bare system, writers int, d time.Duration) (float64, float64) {
	rounds := int(d / slice)
	if rounds < 1 {
		rounds = 1
	}
	per := d / time.Duration(rounds)
	var lops, bops int64
	var lt, bt time.Duration
	for i := 0; i < rounds && ctx.Err() == nil; i++ {
		n, el := run(ctx, bare, writers, per)
		bops, bt = bops+n, bt+el
		n, el = run(ctx, lab, writers, per)
		lops, lt = lops+n, lt+el
	}
	return rate(lops, lt), rate(bops, bt)
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// system is something that takes writes: the lab or bare raft.
type system interface {
	// writer returns a function that does one write; one per goroutine.
	writer(i int) func(seq int64) bool
	close()
}

func run(ctx context.Context, s system, writers int, d time.Duration) (int64, time.Duration) {
	var ok, seqs atomic.Int64
	stop := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		write := s.writer(w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(stop) {
				if write(seqs.Add(1)) {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return ok.Load(), time.Since(start)
}

func labConfig(n int, seed int64) cluster.Config {
	cfg := cluster.DefaultConfig()
	cfg.Nodes = n
	cfg.Seed = seed
	cfg.SampleInterval = 0
	return cfg
}

type labSystem struct {
	c       *cluster.Cluster
	leader  cluster.NodeID
	clients []*cluster.Client
}

func startLab(ctx context.Context, n int, seed int64) (*labSystem, error) {
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := cluster.New(sctx, labConfig(n, seed))
	if err != nil {
		return nil, err
	}
	l, _ := c.Leader()
	return &labSystem{c: c, leader: l}, nil
}

func (s *labSystem) writer(i int) func(int64) bool {
	for len(s.clients) <= i {
		s.clients = append(s.clients, s.c.NewClient(s.leader))
	}
	cl := s.clients[i]
	return func(seq int64) bool {
		_, err := cl.Put(context.Background(), fmt.Sprintf("k%d", seq%1000), fmt.Sprintf("v%d", seq))
		return err == nil
	}
}

func (s *labSystem) close() { s.c.Close() }

type bareSystem struct {
	rafts  []*raft.Raft
	leader *raft.Raft
}

// startBare starts n bare raft.Raft nodes on InmemTransport with the lab's
// state machine and timeouts and waits for a leader.
func startBare(n int) (*bareSystem, error) {
	cfg := labConfig(n, 1)
	s := &bareSystem{}
	trans := make([]*raft.InmemTransport, n)
	var conf raft.Configuration
	for i := range trans {
		addr, tr := raft.NewInmemTransport(raft.ServerAddress("bare" + strconv.Itoa(i+1)))
		trans[i] = tr
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(strconv.Itoa(i + 1)), Address: addr})
	}
	for i := range trans {
		for j := range trans {
			if i != j {
				trans[i].Connect(trans[j].LocalAddr(), trans[j])
			}
		}
	}
	for i := range trans {
		rc := cfg.RaftConfig(cluster.NodeID(i + 1))
		store := raft.NewInmemStore()
		snaps := raft.NewInmemSnapshotStore()
		if err := raft.BootstrapCluster(rc, store, store, snaps, trans[i], conf); err != nil {
			s.close()
			return nil, err
		}
		r, err := raft.NewRaft(rc, cluster.NewFSM(), store, store, snaps, trans[i])
		if err != nil {
			s.close()
			return nil, err
		}
		s.rafts = append(s.rafts, r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.leader == nil {
		for _, r := range s.rafts {
			if r.State() == raft.Leader {
				s.leader = r
			}
		}
		if time.Now().After(deadline) {
			s.close()
			return nil, fmt.Errorf("labbench: bare raft elected no leader")
		}
		time.Sleep(2 * time.Millisecond)
	}
	return s, nil
}

func (s *bareSystem) writer(int) func(int64) bool {
	return func(seq int64) bool {
		cmd := cluster.EncodePut(fmt.Sprintf("k%d", seq%1000), fmt.Sprintf("v%d", seq))
		return s.leader.Apply(cmd, time.Second).Error() == nil
	}
}

func (s *bareSystem) close() {
	for _, r := range s.rafts {
		_ = r.Shutdown().Error()
	}
}

// LabWrites returns the lab's write throughput alone: writers clients next
// to the leader, in-memory storage, no injected delay, for d.
func LabWrites(ctx context.Context, n, writers int, d time.Duration, seed int64) (float64, error) {
	s, err := startLab(ctx, n, seed)
	if err != nil {
		return 0, err
	}
	defer s.close()
	ops, el := run(ctx, s, writers, d)
	return rate(ops, el), nil
}

// BareRaftWrites returns the write throughput of bare raft alone.
func BareRaftWrites(ctx context.Context, n, writers int, d time.Duration) (float64, error) {
	s, err := startBare(n)
	if err != nil {
		return 0, err
	}
	defer s.close()
	ops, el := run(ctx, s, writers, d)
	return rate(ops, el), nil
}

// ModelRow compares a measured write median with the model.
type ModelRow struct {
	Nodes         int     `json:"nodes"`
	DelayMs       float64 `json:"delay_ms"`
	FsyncMs       float64 `json:"fsync_ms"`
	MeasuredP50Ms float64 `json:"measured_p50_ms"`
	ModelMs       float64 `json:"model_ms"`
	Ratio         float64 `json:"ratio"`
	Writes        int     `json:"writes"`
}

// Model is the write latency docs/lab.md derives from hashicorp/raft's
// write path for a client next to the leader: the leader persists (f),
// sends AppendEntries (d), a follower persists (f) and answers (d), the
// leader commits and applies. With equal links every follower answers at
// the same time, so the quorum size does not enter.
func Model(delay, fsync time.Duration) time.Duration { return 2*delay + 2*fsync }

// ModelOptions bound a latency run.
type ModelOptions struct {
	Nodes      []int
	Delays     []time.Duration
	Fsync      time.Duration
	Writes     int // per configuration
	Seed       int64
	OnProgress func(string)
}

// Latency measures the median sequential write latency for each node
// count and delay, next to the model.
func Latency(ctx context.Context, o ModelOptions) ([]ModelRow, error) {
	var rows []ModelRow
	for _, n := range o.Nodes {
		for _, d := range o.Delays {
			if o.OnProgress != nil {
				o.OnProgress(fmt.Sprintf("n=%d delay=%s fsync=%s", n, d, o.Fsync))
			}
			cfg := labConfig(n, o.Seed)
			cfg.Link.Delay = d
			cfg.Storage = cluster.StorageSimFsync
			cfg.FsyncLatency = o.Fsync
			sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			c, err := cluster.New(sctx, cfg)
			cancel()
			if err != nil {
				return rows, err
			}
			l, _ := c.Leader()
			// Warm up: the first writes open the pipeline.
			c.BenchWrites(ctx, 3, 1, 0, l)
			st := c.BenchWrites(ctx, o.Writes, 1, 0, l)
			c.Close()
			model := Model(d, o.Fsync)
			rows = append(rows, ModelRow{
				Nodes: n, DelayMs: ms(d), FsyncMs: ms(o.Fsync),
				MeasuredP50Ms: ms(st.P50), ModelMs: ms(model),
				Ratio: float64(st.P50) / float64(model), Writes: st.OK,
			})
		}
	}
	return rows, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
