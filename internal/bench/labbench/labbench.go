package labbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/internal/bench"
)

// Errors of Run.
var (
	// ErrOptions: Run cannot use the options.
	ErrOptions = errors.New("labbench: invalid options")
	// ErrNoLeader: bare raft elected no leader within 10s.
	ErrNoLeader = errors.New("labbench: bare raft elected no leader")
)

// Options bound a run.
type Options struct {
	// Model measures write latency against the model instead of
	// throughput against bare raft.
	Model bool
	// UI measures the live page instead (internal/labweb): throughput
	// with an attached event stream against none, on the first node count
	// with the last writer count, and event latency.
	UI    bool
	Nodes []int // node counts, each 1..7

	// Throughput (without Model).
	Writers  []int         // concurrent writers, e.g. 1 and 64; 1 is sequential
	Duration time.Duration // per measurement

	// Latency against the model (with Model).
	Delays []time.Duration // one-way link delays d
	Fsync  time.Duration   // simulated fsync latency f
	Writes int             // sequential writes per configuration

	Seed int64 // of the lab clusters
	// Progress receives one line per step ("bench lab: ..."); nil discards.
	Progress io.Writer
}

// Validate reports the first option Run cannot use, wrapping ErrOptions.
func (o Options) Validate() error {
	for _, n := range o.Nodes {
		if n < 1 || n > 7 {
			return fmt.Errorf("%w: nodes %d: must be 1 to 7", ErrOptions, n)
		}
	}
	if o.UI && o.Model {
		return fmt.Errorf("%w: --ui and --model are separate benchmarks", ErrOptions)
	}
	if o.Model {
		if o.Writes < 1 {
			return fmt.Errorf("%w: writes %d: must be positive", ErrOptions, o.Writes)
		}
		return nil
	}
	if o.Duration <= 0 {
		return fmt.Errorf("%w: duration %s: must be positive", ErrOptions, o.Duration)
	}
	for _, w := range o.Writers {
		if w < 1 {
			return fmt.Errorf("%w: writers %d: must be positive", ErrOptions, w)
		}
	}
	return nil
}

// Result is the outcome of a run: Throughput rows, or with Options.Model
// the Model rows. Its JSON form is coordctl bench lab's -w json contract:
// {"benchmark":"lab","rows":Throughput},
// {"benchmark":"lab-model","rows":Model} or {"benchmark":"lab-ui","rows":UI}.
type Result struct {
	Benchmark  string // "lab", "lab-model" or "lab-ui"
	Throughput []Row
	Model      []ModelRow
	UI         []UIRow
	Fsync      time.Duration // with Model: the simulated fsync latency
}

// MarshalJSON writes the contract's form.
func (r Result) MarshalJSON() ([]byte, error) {
	var rows any = r.Throughput
	switch r.Benchmark {
	case "lab-model":
		rows = r.Model
	case "lab-ui":
		rows = r.UI
	}
	return json.Marshal(struct {
		Benchmark string `json:"benchmark"`
		Rows      any    `json:"rows"`
	}{r.Benchmark, rows})
}

// Table is the result in the form every bench command prints.
func (r Result) Table() bench.Table {
	if r.Benchmark == "lab-ui" {
		return uiTable(r.UI)
	}
	if r.Benchmark == "lab-model" {
		t := bench.Table{
			Title:   fmt.Sprintf("lab write latency (sequential p50) against the model 2d+2f of docs/lab.md, fsync latency f=%s", r.Fsync),
			Columns: []string{"measured", "model"},
			Ratios:  []bench.Ratio{{Of: "measured", To: "model", Plain: true}},
		}
		for _, m := range r.Model {
			t.Add(fmt.Sprintf("n%d_delay%gms_write_p50_ms", m.Nodes, m.DelayMs), "ms", m.MeasuredP50Ms, m.ModelMs)
		}
		return t
	}
	t := bench.Table{
		Columns: []string{"lab", "bare_raft"},
		Ratios:  []bench.Ratio{{Of: "lab", To: "bare_raft", Plain: true}},
	}
	for _, row := range r.Throughput {
		t.Add(row.Metric, row.Unit, row.Lab, row.BareRaft)
	}
	return t
}

// Run measures throughput against bare raft, or with Options.Model write
// latency against the model. It returns ErrOptions for invalid options,
// ErrNoLeader, and ctx's error, wrapped, when ctx ends first.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "bench lab: "+format+"\n", args...)
		}
	}
	if o.UI {
		rows, err := ui(ctx, o, progress)
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return Result{}, fmt.Errorf("labbench: %w", err)
		}
		return Result{Benchmark: "lab-ui", UI: rows}, nil
	}
	if o.Model {
		rows, err := latency(ctx, o, progress)
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return Result{}, fmt.Errorf("labbench: %w", err)
		}
		return Result{Benchmark: "lab-model", Model: rows, Fsync: o.Fsync}, nil
	}
	rows, err := throughput(ctx, o, progress)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return Result{}, fmt.Errorf("labbench: %w", err)
	}
	return Result{Benchmark: "lab", Throughput: rows}, nil
}

// Row is one throughput comparison.
type Row struct {
	Metric   string  `json:"metric"`
	Lab      float64 `json:"lab"`
	BareRaft float64 `json:"bare_raft"`
	Unit     string  `json:"unit"`
}

// throughput measures lab and bare raft write throughput for every node
// count and writer count. Both systems run side by side and are measured
// in alternating slices, so a noisy neighbour slows both alike.
func throughput(ctx context.Context, o Options, progress func(string, ...any)) ([]Row, error) {
	var rows []Row
	for _, n := range o.Nodes {
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		progress("%d nodes: starting lab and bare raft", n)
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
			progress("%s", name)
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
			return nil, ErrNoLeader
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

// latency measures the median sequential write latency for each node
// count and delay, next to the model.
func latency(ctx context.Context, o Options, progress func(string, ...any)) ([]ModelRow, error) {
	var rows []ModelRow
	for _, n := range o.Nodes {
		for _, d := range o.Delays {
			if err := ctx.Err(); err != nil {
				return rows, err
			}
			progress("n=%d delay=%s fsync=%s", n, d, o.Fsync)
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
				Nodes: n, DelayMs: bench.Ms(d), FsyncMs: bench.Ms(o.Fsync),
				MeasuredP50Ms: bench.Ms(st.P50), ModelMs: bench.Ms(model),
				Ratio: float64(st.P50) / float64(model), Writes: st.OK,
			})
		}
	}
	return rows, nil
}
