package scenarios

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/coordkit/coordkit/chart"
	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/scenarios/report"
)

// The claims of the scenarios in this file: declared in Scenario.Claims, checked by ID.
const (
	claimWriteRoundTrip        ClaimID = "write-round-trip"
	claimSizeNoExtraRoundTrips ClaimID = "size-no-extra-round-trips"
	claimReadCostByRung        ClaimID = "read-cost-by-rung"
)

func writeCost() Scenario {
	return Scenario{
		Name:    "write-cost",
		Summary: "Write latency against one-way delay (rack, region, cross-region), fsync on and off, 3/5/7 nodes: measured p50/p99 next to the model, and what each read mode costs.",
		Claims: []Claim{
			{ID: claimWriteRoundTrip, Kind: Timing, Text: "each write costs a round trip to a majority plus a log write (within ±20%)"},
			{ID: claimSizeNoExtraRoundTrips, Kind: Timing, Text: "adding nodes does not add round trips: 3, 5 and 7 nodes cost about the same per write"},
			{ID: claimReadCostByRung, Kind: Timing, Text: "reads cost by rung: stale and lease reads ask no one, verify and readindex cost up to a round trip to a majority, log reads cost a write"},
		},
		Run: runWriteCost,
	}
}

// fsyncCost is the simulated fsync of "fsync on": a SATA SSD's order of
// magnitude.
const fsyncCost = 2 * time.Millisecond

type delayClass struct {
	name string
	d    time.Duration
}

type costRow struct {
	class    string
	delay    time.Duration
	nodes    int
	fsync    bool
	p50, p99 time.Duration
	model    time.Duration
	writes   int
}

// measureWrites starts a cluster with the given links and storage and times
// sequential writes from a client next to the leader.
func measureWrites(ctx context.Context, env Env, nodes int, delay time.Duration, fsync bool, n int) (costRow, *cluster.Cluster, error) {
	cfg := labConfig(env, nodes)
	cfg.Link = cluster.LinkConfig{Delay: delay}
	cfg.SampleInterval = 0
	cfg.OpTimeout = 5 * time.Second
	if fsync {
		cfg.Storage = cluster.StorageSimFsync
		cfg.FsyncLatency = fsyncCost
	}
	row := costRow{delay: delay, nodes: nodes, fsync: fsync}
	c, err := startLab(ctx, env, cfg)
	if err != nil {
		return row, nil, err
	}
	leader, err := waitLeader(ctx, c, 20*time.Second)
	if err != nil {
		c.Close()
		return row, nil, err
	}
	cl := c.NewClient(leader)
	leaderChanges := 0
	// put writes once. A loaded machine can starve a leader's heartbeats
	// into an election: that is not the cost of a write. So a write that
	// failed because leadership moved finds the new leader and writes again
	// (the same key and value, so a write whose outcome was unknown does no
	// harm), up to maxLeaderChanges times per measurement; the failed
	// attempt is left out of the sample.
	put := func(key, value, what string) (time.Duration, error) {
		for {
			r, err := cl.Put(ctx, key, value)
			if err == nil {
				return r.Latency, nil
			}
			if !leaderChanged(err) || leaderChanges >= maxLeaderChanges || ctx.Err() != nil {
				return 0, fmt.Errorf("%s: %w", what, err)
			}
			leaderChanges++
			env.Progressf("  %s: %v; measuring on through the next leader", what, err)
			if leader, err = waitLeader(ctx, c, 20*time.Second); err != nil {
				return 0, err
			}
			cl = c.NewClient(leader)
		}
	}
	// One write to warm up (the new leader's first entry of its term).
	if _, err := put("warm", "up", "warm-up write"); err != nil {
		c.Close()
		return row, nil, err
	}
	var lats []time.Duration
	for i := 0; i < n; i++ {
		lat, err := put(fmt.Sprintf("k%d", i), fmt.Sprint(i), fmt.Sprintf("write %d", i))
		if err != nil {
			c.Close()
			return row, nil, err
		}
		lats = append(lats, lat)
	}
	row.p50, row.p99, row.writes = cluster.Percentile(lats, 0.5), cluster.Percentile(lats, 0.99), n
	row.model = writeModel(delay, fsync)
	return row, c, nil
}

// maxLeaderChanges bounds how many elections one measurement rides through
// before it gives up.
const maxLeaderChanges = 3

// leaderChanged reports whether a failed write failed because leadership
// moved (or was being decided) rather than because the lab broke.
func leaderChanged(err error) bool {
	return errors.Is(err, cluster.ErrNoQuorum) || errors.Is(err, cluster.ErrNotLeader) ||
		errors.Is(err, cluster.ErrNoLeader) || errors.Is(err, cluster.ErrTimeout)
}

// writeModel is the cost of one write from a client next to the leader: a
// round trip to the nearest majority (2·delay) plus the log write that
// makes the entry durable on it. hashicorp/raft writes the leader's log
// before it sends the entry, so with fsync on the path holds two log
// writes, the leader's and the follower's, one after the other.
func writeModel(delay time.Duration, fsync bool) time.Duration {
	m := 2 * delay
	if fsync {
		m += 2 * fsyncCost
	}
	return m
}

// writeCostRun is the state of one run of write-cost.
type writeCostRun struct {
	env     Env
	rep     *report.Report
	classes []delayClass
	n       int // writes per configuration
	reads   int // reads per mode
}

// readCost is the measured cost of one read mode.
type readCost struct {
	mode     cluster.ReadMode
	p50, p99 time.Duration
}

func runWriteCost(ctx context.Context, env Env) (*report.Report, error) {
	w := &writeCostRun{
		env: env,
		rep: report.New("write-cost", ""),
		classes: []delayClass{
			{"rack", 500 * time.Microsecond},
			{"region", 10 * time.Millisecond},
			{"cross-region", 50 * time.Millisecond},
		},
		n:     Pick(env.Scale, 12, 100),
		reads: Pick(env.Scale, 8, 50),
	}
	rows, readCluster, err := w.measureWrites(ctx)
	if err != nil {
		return nil, err
	}
	defer readCluster.Close()
	w.judgeWrites(rows)
	costs, err := w.measureReads(ctx, readCluster)
	if err != nil {
		return nil, err
	}
	w.judgeReads(costs)
	return w.rep, nil
}

// region is the delay class of the read costs and of the cluster sizes.
func (w *writeCostRun) region() delayClass { return w.classes[1] }

// measureWrites times writes for every delay class with fsync off and on
// (3 nodes), then for 5 and 7 nodes on region links with fsync on. It
// returns the rows and the region cluster with fsync off, kept for the
// read costs (the caller closes it).
func (w *writeCostRun) measureWrites(ctx context.Context) (rows []costRow, readCluster *cluster.Cluster, err error) {
	defer func() {
		if err != nil && readCluster != nil {
			readCluster.Close()
		}
	}()
	for _, cls := range w.classes {
		for _, fsync := range []bool{false, true} {
			w.env.Progressf("write-cost: %s links (%s one way), 3 nodes, fsync %v", cls.name, cls.d, fsync)
			r, c, err := measureWrites(ctx, w.env, 3, cls.d, fsync, w.n)
			if err != nil {
				return nil, readCluster, err
			}
			r.class = cls.name
			rows = append(rows, r)
			if cls == w.region() && !fsync {
				readCluster = c
			} else {
				c.Close()
			}
		}
	}
	if readCluster == nil {
		return nil, nil, fmt.Errorf("no cluster for the read costs")
	}
	for _, nodes := range []int{5, 7} {
		w.env.Progressf("write-cost: region links, %d nodes, fsync on", nodes)
		r, c, err := measureWrites(ctx, w.env, nodes, w.region().d, true, w.n)
		if err != nil {
			return nil, readCluster, err
		}
		c.Close()
		r.class = w.region().name
		rows = append(rows, r)
	}
	return rows, readCluster, nil
}

// judgeWrites reports the write rows: the table, the model claim (rows
// with a model of 8 ms or more), the cluster-size claim, the chart and the
// metrics.
func (w *writeCostRun) judgeWrites(rows []costRow) {
	rep := w.rep
	tbl := report.Table{Title: "Write latency (client next to the leader, one write at a time)",
		Columns: []string{"links", "one-way", "nodes", "fsync", "p50", "p99", "model", "p50/model"}}
	for _, r := range rows {
		fs := "off"
		if r.fsync {
			fs = "on (" + fsyncCost.String() + ")"
		}
		tbl.Rows = append(tbl.Rows, []string{r.class, r.delay.String(), fmt.Sprint(r.nodes), fs,
			fmtMs(r.p50), fmtMs(r.p99), fmtMs(r.model), fmt.Sprintf("%.2f", ratio(r.p50, r.model))})
	}
	rep.AddTable(tbl)

	// The model check: the rows where the network or the disk, not the
	// lab's own overhead, dominates (model of at least 8 ms).
	var checked, within int
	worst := 0.0
	for _, r := range rows {
		if r.model < 8*time.Millisecond {
			continue
		}
		checked++
		e := ratio(r.p50, r.model) - 1
		if math.Abs(e) <= 0.20 {
			within++
		}
		if math.Abs(e) > math.Abs(worst) {
			worst = e
		}
	}
	check(rep, claimWriteRoundTrip, "p50 within ±20% of 2·delay (+ the log writes with fsync on) wherever the model is 8 ms or more",
		fmt.Sprintf("%d of %d configurations within ±20%%; worst %+.0f%%", within, checked, worst*100),
		checked > 0 && within == checked)

	var base time.Duration
	var bySize []string
	sizeOK := true
	for _, r := range rows {
		if r.class == "region" && r.fsync && r.nodes == 3 {
			base = r.p50
		}
	}
	for _, r := range rows {
		if r.class == "region" && r.fsync {
			bySize = append(bySize, fmt.Sprintf("%d nodes %s", r.nodes, fmtMs(r.p50)))
			if base > 0 && math.Abs(ratio(r.p50, base)-1) > 0.25 {
				sizeOK = false
			}
		}
	}
	check(rep, claimSizeNoExtraRoundTrips, "3, 5 and 7 nodes within ±25% of each other (region links, fsync on): the leader waits for the fastest majority, in parallel",
		strings.Join(bySize, ", "), sizeOK && len(bySize) == 3)

	// The chart: p50 against one-way delay, fsync off and on, with the model.
	ch := chart.Chart{Title: "Write latency p50 against one-way delay (3 nodes)", XLabel: "one-way delay (ms)", YLabel: "write latency (ms)"}
	for _, fsync := range []bool{false, true} {
		name := "fsync off"
		if fsync {
			name = "fsync on"
		}
		meas := chart.Series{Name: name + ", measured p50"}
		model := chart.Series{Name: name + ", model", Dashed: true}
		for _, r := range rows {
			if r.nodes == 3 && r.fsync == fsync {
				x := cluster.Ms(r.delay)
				meas.Points = append(meas.Points, chart.Point{X: x, Y: cluster.Ms(r.p50)})
				model.Points = append(model.Points, chart.Point{X: x, Y: cluster.Ms(r.model)})
			}
		}
		ch.Series = append(ch.Series, meas, model)
	}
	rep.AddChart(ch)
	for _, r := range rows {
		fs := "nofsync"
		if r.fsync {
			fs = "fsync"
		}
		rep.Metric(fmt.Sprintf("write_p50_ms_%s_n%d_%s", r.class, r.nodes, fs), cluster.Ms(r.p50), "ms")
	}
}

// measureReads times w.reads reads of each mode at the leader of c.
func (w *writeCostRun) measureReads(ctx context.Context, c *cluster.Cluster) ([]readCost, error) {
	w.env.Progressf("write-cost: read costs by mode (region links, 3 nodes)")
	leader, err := waitLeader(ctx, c, 10*time.Second)
	if err != nil {
		return nil, err
	}
	cl := c.NewClient(leader)
	var costs []readCost
	for _, mode := range cluster.ReadModes() {
		var lats []time.Duration
		for j := 0; j < w.reads; j++ {
			r, err := cl.Get(ctx, "k0", mode)
			if err != nil {
				return nil, fmt.Errorf("%s read: %w", mode, err)
			}
			lats = append(lats, r.Latency)
		}
		costs = append(costs, readCost{mode: mode, p50: cluster.Percentile(lats, 0.5), p99: cluster.Percentile(lats, 0.99)})
	}
	return costs, nil
}

// judgeReads reports the read costs against a round trip on region links,
// and the notes.
func (w *writeCostRun) judgeReads(costs []readCost) {
	rep := w.rep
	rtt := 2 * w.region().d
	readChart := chart.Chart{Title: fmt.Sprintf("Read latency p50 by mode (region links, %s one way)", w.region().d), YLabel: "read latency (ms)"}
	measured := chart.Series{Name: "measured p50"}
	expected := chart.Series{Name: "model", Dashed: true}
	readTbl := report.Table{Title: "Read cost by mode (client next to the leader)", Columns: []string{"mode", "p50", "p99", "model", "why"}}
	readOK := true
	var readObs []string
	var confirmP50 []time.Duration
	for i, rc := range costs {
		mode, p50 := rc.mode, rc.p50
		var model time.Duration
		why := "local state, no one asked"
		switch mode {
		case cluster.ReadVerify, cluster.ReadIndex:
			model, why = rtt, "up to one round trip to a majority to confirm leadership"
		case cluster.ReadLog:
			model, why = rtt, "a log entry: a round trip to a majority (fsync off here)"
		}
		readChart.Categories = append(readChart.Categories, string(mode))
		measured.Points = append(measured.Points, chart.Point{X: float64(i), Y: cluster.Ms(p50)})
		expected.Points = append(expected.Points, chart.Point{X: float64(i), Y: cluster.Ms(model)})
		readTbl.Rows = append(readTbl.Rows, []string{string(mode), fmtMs(p50), fmtMs(rc.p99), fmtMs(model), why})
		rep.Metric("read_p50_ms_"+string(mode), cluster.Ms(p50), "ms")
		readObs = append(readObs, fmt.Sprintf("%s %s", mode, fmtMs(p50)))
		switch mode {
		case cluster.ReadStale, cluster.ReadLease:
			readOK = readOK && p50 < rtt/4
		case cluster.ReadVerify, cluster.ReadIndex:
			readOK = readOK && p50 <= rtt*12/10
			confirmP50 = append(confirmP50, p50)
		case cluster.ReadLog:
			readOK = readOK && p50 >= rtt*8/10
		}
	}
	readChart.Series = []chart.Series{measured, expected}
	rep.AddTable(readTbl)
	rep.AddChart(readChart)
	check(rep, claimReadCostByRung, fmt.Sprintf("stale and lease under a quarter of the round trip (%s); verify and readindex at most the round trip (+20%%); log at least 80%% of it", fmtMs(rtt)),
		strings.Join(readObs, ", "), readOK)
	if len(confirmP50) == 2 && confirmP50[0] < rtt/2 {
		rep.Note("verify came in under half a round trip. hashicorp/raft's VerifyLeader counts the answer to any heartbeat that returns after the call, including one that was already in flight when the call was made: a confirmation can cost less than a round trip, and it proves leadership only as of a heartbeat sent before the read began. The lab's readindex does its own round with a fresh term check instead, so it pays the full round trip (%s here).", fmtMs(confirmP50[1]))
	}
	if w.env.Scale == ScaleSmall {
		rep.Note("Small scale takes %d writes and %d reads per configuration; --scale full takes 100 and 50.", w.n, w.reads)
	}
	rep.Note("The model counts two log writes with fsync on: hashicorp/raft persists the entry on the leader before sending it, and the follower persists it before acknowledging. A leader that wrote in parallel with replication (Raft thesis §10.2.1) would pay one.")
	rep.Note("Rows with a model under 8 ms are shown but not checked: there the lab's own scheduling (goroutines, timers, the simulated network's hops, the race detector) adds a millisecond or two, a large part of the cost.")
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// fmtMs prints d in milliseconds, or in microseconds below a tenth of one.
func fmtMs(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	if d < 100*time.Microsecond {
		return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1000)
	}
	return chart.FormatValue(cluster.Ms(d)) + " ms"
}
