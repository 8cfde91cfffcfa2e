package electbench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/scenarios/report"
)

// RollingOptions bound a rolling-upgrade run (coordctl bench elect --rolling N).
type RollingOptions struct {
	// Replicas is the number of sidecar processes rolled, one at a time.
	Replicas int
	// Binary is the coordctl executable the sidecars run.
	Binary string
	// TTL is the sidecars' --ttl; 3s when zero.
	TTL time.Duration
	// PreemptRounds is how many preemptions are timed (in-process).
	PreemptRounds int
	// Progress receives one line per step; nil discards.
	Progress io.Writer
}

// Validate reports the first option RunRolling cannot use, wrapping ErrOptions.
func (o RollingOptions) Validate() error {
	switch {
	case o.Replicas < 2:
		return fmt.Errorf("%w: --rolling %d: at least 2 replicas", ErrOptions, o.Replicas)
	case o.Binary == "":
		return fmt.Errorf("%w: no coordctl binary for the sidecars", ErrOptions)
	case o.PreemptRounds < 1:
		return fmt.Errorf("%w: preempt rounds %d: must be at least 1", ErrOptions, o.PreemptRounds)
	case o.TTL != 0 && o.TTL < time.Second:
		return fmt.Errorf("%w: ttl %s: at least 1s", ErrOptions, o.TTL)
	}
	return nil
}

// The two rolls compared side by side.
const (
	ColFirstCome = "first_come"
	ColNewest    = "newest_version_prestop"
)

// RollingRow is one metric of a rolling run; NaN (null in JSON) where it
// was not measured for a column.
type RollingRow struct {
	Metric        string   `json:"metric"`
	FirstCome     *float64 `json:"first_come"`
	NewestVersion *float64 `json:"newest_version_prestop"`
	Unit          string   `json:"unit"`
}

// RollingResult is the outcome; its JSON form is coordctl bench elect
// --rolling's -w json contract.
type RollingResult struct {
	Benchmark string       `json:"benchmark"` // "elect-rolling"
	Replicas  int          `json:"replicas"`
	Rows      []RollingRow `json:"rows"`
	// Timelines picture each replica slot over the roll: leader (its
	// command running), standby, down; keyed by column.
	Timelines map[string]*report.Timeline `json:"timelines"`
}

func optFloat(v float64) *float64 {
	if v != v { // NaN
		return nil
	}
	return &v
}

func (r RollingResult) value(metric string, col int) float64 {
	for _, row := range r.Rows {
		if row.Metric == metric {
			p := row.FirstCome
			if col == 1 {
				p = row.NewestVersion
			}
			if p == nil {
				return nan
			}
			return *p
		}
	}
	return nan
}

var nan = func() float64 { z := 0.0; return z / z }()

// Table is the result in the form every bench command prints.
func (r RollingResult) Table() bench.Table {
	t := bench.Table{
		Title:   fmt.Sprintf("rolling upgrade of %d sidecar processes, oldest (the leader) first: stop one 1.0.0, start one 2.0.0, wait until it is queued and leadership has settled, repeat", r.Replicas),
		Columns: []string{ColFirstCome, ColNewest},
		Ratios:  []bench.Ratio{{Of: ColNewest, To: ColFirstCome}},
	}
	for _, row := range r.Rows {
		t.Add(row.Metric, row.Unit, r.value(row.Metric, 0), r.value(row.Metric, 1))
	}
	return t
}

// WriteTimelines writes the picture of each roll, one after the other.
func (r RollingResult) WriteTimelines(w io.Writer) error {
	for _, col := range []string{ColFirstCome, ColNewest} {
		tl := r.Timelines[col]
		if tl == nil {
			continue
		}
		if _, err := fmt.Fprintf(w, "\n%s: leader of each replica slot over the roll", col); err != nil {
			return err
		}
		if err := report.WriteTimeline(w, tl); err != nil {
			return err
		}
	}
	return nil
}

// Reports are the rolls as scenario reports (the timeline and the
// metrics), for report.WriteHTML.
func (r RollingResult) Reports() []*report.Report {
	var out []*report.Report
	for i, col := range []string{ColFirstCome, ColNewest} {
		rep := report.New("bench elect --rolling: "+col, "")
		rep.Passed = true
		rep.Timeline = r.Timelines[col]
		for _, row := range r.Rows {
			if v := r.value(row.Metric, i); v == v {
				rep.Metrics = append(rep.Metrics, report.Metric{Name: row.Metric, Value: v, Unit: row.Unit})
			}
		}
		out = append(out, rep)
	}
	return out
}

// leadership is one stretch of a command running as leader, as the
// command itself logged it (the resource's view: it runs only while its
// sidecar leads).
type leadership struct {
	token       int64
	start, stop time.Time
	slot        int
}

// rollStats is what one roll measured.
type rollStats struct {
	changes    int
	gaps       []time.Duration
	overlaps   int
	tokensOK   bool
	elapsed    time.Duration
	timeline   *report.Timeline
	leaderless time.Duration
}

// RunRolling starts an embedded etcd and rolls o.Replicas sidecar
// processes twice on it, first-come and newest-version with a
// resign-to-best preStop, then times preemption in-process.
func RunRolling(ctx context.Context, o RollingOptions) (RollingResult, error) {
	if err := o.Validate(); err != nil {
		return RollingResult{}, err
	}
	if o.TTL == 0 {
		o.TTL = 3 * time.Second
	}
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "bench elect --rolling: "+format+"\n", args...)
		}
	}
	srv, stop, err := bench.StartEtcd(ctx, "elect-rolling", false, o.Progress)
	if err != nil {
		return RollingResult{}, err
	}
	defer stop()
	dir, err := os.MkdirTemp("", "coordctl-bench-rolling-")
	if err != nil {
		return RollingResult{}, err
	}
	defer os.RemoveAll(dir)

	var stats [2]rollStats
	for i, pol := range []election.Policy{election.PolicyFirstCome, election.PolicyNewestVersion} {
		progress("%s: %d replicas", pol, o.Replicas)
		r := &roller{o: o, endpoints: strings.Join(srv.Endpoints(), ","), name: "roll-" + string(pol), policy: pol,
			log: filepath.Join(dir, string(pol)+".log"), progress: progress}
		if stats[i], err = r.run(ctx); err != nil {
			return RollingResult{}, fmt.Errorf("electbench: roll %s: %w", pol, err)
		}
	}
	progress("preemption: %d rounds in-process", o.PreemptRounds)
	pre, err := measurePreemption(ctx, srv.Endpoints(), o.PreemptRounds)
	if err != nil {
		return RollingResult{}, fmt.Errorf("electbench: preemption: %w", err)
	}

	res := RollingResult{Benchmark: "elect-rolling", Replicas: o.Replicas, Timelines: map[string]*report.Timeline{
		ColFirstCome: stats[0].timeline, ColNewest: stats[1].timeline}}
	both := func(metric, unit string, f func(rollStats) float64) {
		res.Rows = append(res.Rows, RollingRow{Metric: metric, Unit: unit, FirstCome: optFloat(f(stats[0])), NewestVersion: optFloat(f(stats[1]))})
	}
	gapQ := func(q float64) func(rollStats) float64 {
		return func(s rollStats) float64 {
			if len(s.gaps) == 0 {
				return nan
			}
			return bench.Ms(bench.Percentile(s.gaps, q))
		}
	}
	both("leadership_changes", "count", func(s rollStats) float64 { return float64(s.changes) })
	both("gap_p50_ms", "ms", gapQ(0.50))
	both("gap_p99_ms", "ms", gapQ(0.99))
	both("gap_max_ms", "ms", gapQ(1))
	both("leaderless_total_ms", "ms", func(s rollStats) float64 { return bench.Ms(s.leaderless) })
	both("overlapping_leaders", "count", func(s rollStats) float64 { return float64(s.overlaps) })
	both("tokens_decreasing", "count", func(s rollStats) float64 {
		if s.tokensOK {
			return 0
		}
		return 1
	})
	both("roll_s", "s", func(s rollStats) float64 { return s.elapsed.Seconds() })
	one := func(metric, unit string, v float64) {
		res.Rows = append(res.Rows, RollingRow{Metric: metric, Unit: unit, NewestVersion: optFloat(v)})
	}
	one("preempt_p50_ms", "ms", bench.Ms(bench.Percentile(pre.preempt, 0.50)))
	one("preempt_p99_ms", "ms", bench.Ms(bench.Percentile(pre.preempt, 0.99)))
	one("preempt_from_start_p50_ms", "ms", bench.Ms(bench.Percentile(pre.fromStart, 0.50)))
	one("etcd_commit_p50_ms", "ms", bench.Ms(bench.Percentile(pre.commit, 0.50)))
	return res, nil
}

// roller is one roll of sidecar processes.
type roller struct {
	o         RollingOptions
	endpoints string
	name      string
	policy    election.Policy
	log       string
	progress  func(string, ...any)

	mu     sync.Mutex
	events []slotEvent // process starts and exits, for the timeline
}

type slotEvent struct {
	slot int
	at   time.Time
	up   bool
}

func (r *roller) mark(slot int, up bool) {
	r.mu.Lock()
	r.events = append(r.events, slotEvent{slot, time.Now(), up})
	r.mu.Unlock()
}

// childScript logs its start and stop with the fencing token and the time
// in nanoseconds; it runs only while its sidecar leads. A command killed
// before its trap ran logs no stop and counts as an overlap, so the
// sidecars give it --kill-grace 10s (2s was once too short for a starved
// shell's trap; a loss still kills it before the lease can expire).
const childScript = `echo "start $COORD_FENCING_TOKEN $(date +%s%N) $COORD_LEADER_ID" >> "$ROLL_LOG"
trap 'echo "stop $COORD_FENCING_TOKEN $(date +%s%N) $COORD_LEADER_ID" >> "$ROLL_LOG"; exit 0' TERM
while :; do sleep 1 & wait $!; done`

type proc struct {
	id   string
	slot int
	cmd  *exec.Cmd
	url  string
	done chan struct{}
}

func (r *roller) start(ctx context.Context, slot int, version string) (*proc, error) {
	id := fmt.Sprintf("r%d-v%s", slot, version)
	args := []string{"--endpoints", r.endpoints, "-w", "json", "sidecar", "--election", r.name, "--id", id,
		"--listen", "127.0.0.1:0", "--ttl", r.o.TTL.String(), "--kill-grace", "10s",
		"--policy", string(r.policy), "--version", version, "--", "sh", "-c", childScript}
	cmd := exec.Command(r.o.Binary, args...)
	cmd.Env = append(os.Environ(), "ROLL_LOG="+r.log)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start sidecar: %w", err)
	}
	p := &proc{id: id, slot: slot, cmd: cmd, done: make(chan struct{})}
	r.mark(slot, true)
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["event"] == "listening" {
				url <- m["url"].(string)
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		r.mark(slot, false)
		close(p.done)
	}()
	select {
	case p.url = <-url:
	case <-p.done:
		return nil, fmt.Errorf("sidecar %s exited before listening", id)
	case <-time.After(30 * time.Second):
		p.kill()
		return nil, fmt.Errorf("sidecar %s not listening after 30s", id)
	case <-ctx.Done():
		p.kill()
		return nil, ctx.Err()
	}
	return p, nil
}

func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop sends SIGTERM and waits for the exit (SIGKILL after 20s).
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.kill()
	}
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// candidates reads GET /v1/candidates of p.
func (p *proc) candidates(ctx context.Context) ([]election.Candidate, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/v1/candidates", nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var v struct {
		Candidates []election.Candidate `json:"candidates"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /v1/candidates: %s", resp.Status)
	}
	return v.Candidates, json.NewDecoder(resp.Body).Decode(&v)
}

// preStop is the Kubernetes preStop hook of the coordinated roll: hand
// over to the best other replica. A standby answers 409: nothing to do.
func (p *proc) preStop(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/v1/resign?to=best", strings.NewReader("{}"))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusConflict, http.StatusNotFound:
		return nil
	}
	return fmt.Errorf("preStop: POST /v1/resign?to=best: %s", resp.Status)
}

// settled waits until p's view of the queue holds want (by id), a leader
// of ours that the policy prefers (for first-come: any leader), and that
// leader's command has started (its "start" line is in the log): the
// roll's counts end when the last step has settled, and a leader whose
// command starts after that end would not be counted (on a loaded machine
// the command starts well after the queue shows the leader).
func (r *roller) settled(ctx context.Context, p *proc, want []string) error {
	deadline := time.Now().Add(r.o.TTL + 30*time.Second)
	pref := election.Preference{Policy: r.policy}
	for {
		cs, err := p.candidates(ctx)
		if err == nil && len(cs) > 0 && cs[0].Attributes != nil {
			have := map[string]bool{}
			for _, c := range cs {
				have[c.ID()] = true
			}
			ok := true
			for _, id := range want {
				ok = ok && have[id]
			}
			if b, found := pref.Best(cs, 0); ok && found && (r.policy == election.PolicyFirstCome || b.Token == cs[0].Token ||
				election.CompareVersions(b.Attributes.Version, cs[0].Attributes.Version) == 0) && r.started(int64(cs[0].Token)) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("leadership did not settle with %v queued (last error %v)", want, err)
		}
		if !bench.Sleep(ctx, 10*time.Millisecond) {
			return ctx.Err()
		}
	}
}

func (r *roller) run(ctx context.Context) (rollStats, error) {
	n := r.o.Replicas
	procs := make([]*proc, n)
	defer func() {
		for _, p := range procs {
			if p != nil {
				p.stop()
			}
		}
	}()
	t0 := time.Now()
	var ids []string
	// startSettled starts the replica of slot and waits until it is
	// queued and leadership has settled.
	startSettled := func(slot int, version string) error {
		p, err := r.start(ctx, slot, version)
		if err != nil {
			return err
		}
		procs[slot-1] = p
		ids = append(ids, p.id)
		return r.settled(ctx, p, ids)
	}
	for i := range n {
		if err := startSettled(i+1, "1.0.0"); err != nil {
			return rollStats{}, err
		}
	}
	rollStart := time.Now()
	for i := range n {
		old := procs[i]
		if r.policy != election.PolicyFirstCome {
			pctx, cancel := context.WithTimeout(ctx, r.o.TTL+30*time.Second)
			err := old.preStop(pctx)
			cancel()
			if err != nil {
				return rollStats{}, err
			}
		}
		old.stop()
		procs[i] = nil
		ids = ids[1:]
		if err := startSettled(i+1, "2.0.0"); err != nil {
			return rollStats{}, err
		}
		r.progress("%s: replica %d/%d rolled", r.policy, i+1, n)
	}
	rollEnd := time.Now()
	ls, err := readLeaderships(r.log)
	if err != nil {
		return rollStats{}, err
	}
	s := analyze(ls, rollStart, rollEnd)
	s.elapsed = rollEnd.Sub(rollStart)
	// The picture ends with the roll; the processes stop after it.
	s.timeline = r.timeline(ls, t0, rollEnd)
	return s, nil
}

// started reports whether the command of the leader with token has
// written its "start" line.
func (r *roller) started(token int64) bool {
	ls, err := readLeaderships(r.log)
	if err != nil {
		return false
	}
	for _, l := range ls {
		if l.token == token && !l.start.IsZero() {
			return true
		}
	}
	return false
}

// readLeaderships parses the commands' log into leaderships by token.
func readLeaderships(path string) ([]leadership, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	by := map[int64]*leadership{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			continue
		}
		tok, err1 := strconv.ParseInt(f[1], 10, 64)
		ns, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad log line %q", line)
		}
		l := by[tok]
		if l == nil {
			l = &leadership{token: tok}
			// The id is r<slot>-v<version>.
			fmt.Sscanf(f[3], "r%d-", &l.slot)
			by[tok] = l
		}
		switch f[0] {
		case "start":
			l.start = time.Unix(0, ns)
		case "stop":
			l.stop = time.Unix(0, ns)
		}
	}
	var out []leadership
	for _, l := range by {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out, nil
}

// analyze counts the changes of leader during [from, to], the gap before
// each, overlaps (a command started before the previous one stopped), and
// whether tokens only grew in start order.
func analyze(ls []leadership, from, to time.Time) rollStats {
	s := rollStats{tokensOK: true}
	for i := 1; i < len(ls); i++ {
		prev, cur := ls[i-1], ls[i]
		if cur.token <= prev.token {
			s.tokensOK = false
		}
		if cur.start.Before(from) || cur.start.After(to) {
			continue
		}
		s.changes++
		if prev.stop.IsZero() || cur.start.Before(prev.stop) {
			s.overlaps++
			continue
		}
		gap := cur.start.Sub(prev.stop)
		s.gaps = append(s.gaps, gap)
		s.leaderless += gap
	}
	return s
}

// timeline pictures each replica slot: down, standby, leader.
func (r *roller) timeline(ls []leadership, t0, end time.Time) *report.Timeline {
	off := func(t time.Time) report.Millis {
		if t.Before(t0) {
			return 0
		}
		return report.Millis(t.Sub(t0))
	}
	r.mu.Lock()
	evs := append([]slotEvent(nil), r.events...)
	r.mu.Unlock()
	tl := &report.Timeline{End: off(end)}
	for slot := 1; slot <= r.o.Replicas; slot++ {
		// Up intervals of the slot's processes, in order.
		type iv struct{ from, to time.Time }
		var ups []iv
		for _, e := range evs {
			if e.slot != slot {
				continue
			}
			if e.up {
				ups = append(ups, iv{from: e.at})
			} else if len(ups) > 0 {
				ups[len(ups)-1].to = e.at
			}
		}
		lane := report.Lane{Name: fmt.Sprintf("replica %d", slot)}
		ups = slices.DeleteFunc(ups, func(u iv) bool { return u.from.After(end) })
		cursor := t0
		add := func(from, to time.Time, state string) {
			if to.After(from) {
				lane.Spans = append(lane.Spans, report.Span{From: off(from), To: off(to), State: state})
			}
		}
		for _, u := range ups {
			if u.to.IsZero() || u.to.After(end) {
				u.to = end
			}
			add(cursor, u.from, report.StateDown)
			c := u.from
			for _, l := range ls {
				if l.slot != slot || l.start.Before(u.from) || !l.start.Before(u.to) {
					continue
				}
				stop := l.stop
				if stop.IsZero() || stop.After(u.to) {
					stop = u.to
				}
				add(c, l.start, report.StateFollower)
				add(l.start, stop, report.StateLeader)
				c = stop
			}
			add(c, u.to, report.StateFollower)
			cursor = u.to
		}
		add(cursor, end, report.StateDown)
		tl.Lanes = append(tl.Lanes, lane)
	}
	return tl
}
