package labbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/labweb"
)

// UIRow is one figure of the page benchmark: with the page attached (an
// event stream reader) and, for throughput, without the page.
type UIRow struct {
	Metric       string  `json:"metric"`
	PageAttached float64 `json:"page_attached"`
	// NoPage is absent for figures that exist only with a page.
	NoPage *float64 `json:"no_page,omitempty"`
	Unit   string   `json:"unit"`
}

// uiClient talks to the lab's server without any proxy.
var uiClient = &http.Client{Transport: &http.Transport{Proxy: nil}}

// ui measures what the page costs and how fast it hears: for the first
// node count, write throughput with labweb serving an attached event
// stream against the same cluster with no labweb at all (alternating
// slices), the time from POST /api/command to the command's event on the
// stream, and the time from a link change to the status event showing it.
func ui(ctx context.Context, o Options, progress func(string, ...any)) ([]UIRow, error) {
	n := 5
	if len(o.Nodes) > 0 {
		n = o.Nodes[0]
	}
	writers := 16
	if len(o.Writers) > 0 {
		writers = o.Writers[len(o.Writers)-1]
	}
	progress("%d nodes: starting the lab", n)
	lab, err := startLab(ctx, n, o.Seed)
	if err != nil {
		return nil, err
	}
	defer lab.close()

	// Throughput: alternate slices with and without the page.
	rounds := max(int(o.Duration/slice), 1)
	per := o.Duration / time.Duration(rounds)
	var withOps, noOps, events int64
	var withT, noT, withCPU, noCPU time.Duration
	progress("n%d_concurrent%d_writes_per_s: %d slices of %s each way", n, writers, rounds, per)
	for i := 0; i < 2*rounds && ctx.Err() == nil; i++ {
		// Each round runs both, in turns: no page first in even rounds,
		// the page first in odd ones, so neither always inherits the
		// other's garbage or warm pipeline.
		if (i%2 == 0) == (i/2%2 == 0) {
			cpu0 := bench.CPUTime()
			k, el := run(ctx, lab, writers, per)
			noOps, noT, noCPU = noOps+k, noT+el, noCPU+bench.CPUTime()-cpu0
			continue
		}
		k, el, ev, cpu, err := withPage(ctx, lab, writers, per)
		if err != nil {
			return nil, err
		}
		withOps, withT, events, withCPU = withOps+k, withT+el, events+ev, withCPU+cpu
	}
	progress("commands posted every 50ms under the same write load")
	cmdLat, doneLat, err := commandLatency(ctx, lab, writers, o.Duration/2)
	if err != nil {
		return nil, err
	}
	progress("status events after a link change")
	statLat, err := statusLatency(ctx, lab.c, 20)
	if err != nil {
		return nil, err
	}
	noPage := rate(noOps, noT)
	rows := []UIRow{
		{Metric: fmt.Sprintf("n%d_concurrent%d_writes_per_s", n, writers), PageAttached: rate(withOps, withT), NoPage: &noPage, Unit: "writes/s"},
		{Metric: "cpu_us_per_write", PageAttached: perWrite(withCPU, withOps), NoPage: ptr(perWrite(noCPU, noOps)), Unit: "µs"},
		{Metric: "stream_events_per_s", PageAttached: rate(events, withT), Unit: "events/s"},
		{Metric: "post_to_command_event_p50_ms", PageAttached: bench.Ms(bench.Percentile(cmdLat, 0.50)), Unit: "ms"},
		{Metric: "post_to_command_event_p99_ms", PageAttached: bench.Ms(bench.Percentile(cmdLat, 0.99)), Unit: "ms"},
		{Metric: "command_done_to_event_p50_ms", PageAttached: bench.Ms(bench.Percentile(doneLat, 0.50)), Unit: "ms"},
		{Metric: "command_done_to_event_p99_ms", PageAttached: bench.Ms(bench.Percentile(doneLat, 0.99)), Unit: "ms"},
		{Metric: "change_to_status_event_p50_ms", PageAttached: bench.Ms(bench.Percentile(statLat, 0.50)), Unit: "ms"},
		{Metric: "change_to_status_event_p99_ms", PageAttached: bench.Ms(bench.Percentile(statLat, 0.99)), Unit: "ms"},
		{Metric: "commands_timed", PageAttached: float64(len(cmdLat)), Unit: "count"},
	}
	return rows, nil
}

// page is a labweb server on the lab with one reader of its stream, which
// records when each event arrived.
type page struct {
	lab     *labweb.Lab
	srv     *labweb.Server
	body    io.Closer
	done    chan struct{}
	mu      sync.Mutex
	arrived map[uint64]time.Time
	status  chan []byte
	events  atomic.Int64
}

func attach(c *cluster.Cluster) (*page, error) {
	lab, err := labweb.New(c, labweb.Options{})
	if err != nil {
		return nil, err
	}
	srv, err := labweb.NewServer(lab, labweb.ServerConfig{Addr: "127.0.0.1:0"})
	if err != nil {
		lab.Close()
		return nil, err
	}
	resp, err := uiClient.Get(srv.URL() + "api/events")
	if err != nil {
		_ = srv.Close()
		lab.Close()
		return nil, err
	}
	p := &page{lab: lab, srv: srv, body: resp.Body, done: make(chan struct{}), arrived: map[uint64]time.Time{}, status: make(chan []byte, 1024)}
	first := make(chan struct{})
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var id uint64
		var typ string
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id, _ = strconv.ParseUint(line[4:], 10, 64)
			case strings.HasPrefix(line, "event: "):
				typ = line[7:]
			case strings.HasPrefix(line, "data: "):
				now := time.Now()
				p.events.Add(1)
				p.mu.Lock()
				p.arrived[id] = now
				p.mu.Unlock()
				if typ == labweb.TypeStatus {
					select {
					case p.status <- []byte(line[6:]):
					default:
					}
				}
				once.Do(func() { close(first) })
			}
		}
		once.Do(func() { close(first) })
	}()
	<-first
	return p, nil
}

func (p *page) close() {
	_ = p.srv.Close()
	p.body.Close()
	<-p.done
	p.lab.Close()
}

// post sends one command and returns its event's sequence number and
// how long the command ran (the event's ms).
func (p *page) post(line string) (uint64, time.Duration, error) {
	body, _ := json.Marshal(labweb.CommandRequest{Line: line})
	resp, err := uiClient.Post(p.srv.URL()+"api/command", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("%s: HTTP %d", line, resp.StatusCode)
	}
	seq, err := strconv.ParseUint(resp.Header.Get("X-Lab-Seq"), 10, 64)
	if err != nil {
		return 0, 0, err
	}
	ran, _ := strconv.ParseFloat(resp.Header.Get("X-Lab-Ms"), 64)
	return seq, time.Duration(ran * float64(time.Millisecond)), nil
}

// waitEvent waits for the event seq to have arrived and returns when.
func (p *page) waitEvent(ctx context.Context, seq uint64) (time.Time, error) {
	for {
		p.mu.Lock()
		at, ok := p.arrived[seq]
		p.mu.Unlock()
		if ok {
			return at, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-p.done:
			return time.Time{}, fmt.Errorf("event stream ended before event %d", seq)
		case <-time.After(200 * time.Microsecond):
		}
	}
}

// withPage runs writers for d with a page attached (its stream at the
// rate the lab publishes under this load) and returns the writes, the
// time, the events the page received and the process's CPU time.
func withPage(ctx context.Context, lab *labSystem, writers int, d time.Duration) (int64, time.Duration, int64, time.Duration, error) {
	p, err := attach(lab.c)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	before := p.events.Load()
	cpu0 := bench.CPUTime()
	k, el := run(ctx, lab, writers, d)
	cpu := bench.CPUTime() - cpu0
	ev := p.events.Load() - before
	p.close()
	return k, el, ev, cpu, nil
}

func perWrite(cpu time.Duration, writes int64) float64 {
	if writes == 0 {
		return 0
	}
	return float64(cpu.Microseconds()) / float64(writes)
}

func ptr(f float64) *float64 { return &f }

// commandLatency posts a command every 50ms for d while writers run, and
// returns for each the time from the POST to its event on the stream, and
// from the command's end (POST plus the time it ran, as its event says)
// to the event.
func commandLatency(ctx context.Context, lab *labSystem, writers int, d time.Duration) (post, done []time.Duration, err error) {
	p, err := attach(lab.c)
	if err != nil {
		return nil, nil, err
	}
	defer p.close()
	stop := make(chan struct{})
	cmdDone := make(chan struct{})
	go func() {
		defer close(cmdDone)
		lines := []string{"leader", "put ui-key v", "links", "get ui-key --mode stale"}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			start := time.Now()
			seq, ran, perr := p.post(lines[i%len(lines)])
			if perr == nil {
				var at time.Time
				at, perr = p.waitEvent(ctx, seq)
				post = append(post, at.Sub(start))
				done = append(done, max(at.Sub(start)-ran, 0))
			}
			if perr != nil {
				err = perr
				return
			}
		}
	}()
	run(ctx, lab, writers, d)
	close(stop)
	<-cmdDone
	return post, done, err
}

// statusLatency cuts and heals a link between two followers, rounds
// times, and measures from the POST to the first status event showing it.
func statusLatency(ctx context.Context, c *cluster.Cluster, rounds int) ([]time.Duration, error) {
	p, err := attach(c)
	if err != nil {
		return nil, err
	}
	defer p.close()
	l, _ := c.Leader()
	var a, b cluster.NodeID
	for i := 1; i <= c.Size(); i++ {
		if id := cluster.NodeID(i); id != l {
			if a == 0 {
				a = id
			} else if b == 0 {
				b = id
			}
		}
	}
	if b == 0 {
		return nil, nil // one or two nodes: no two followers to cut
	}
	var lats []time.Duration
	for i := 0; i < 2*rounds && ctx.Err() == nil; i++ {
		cut := i%2 == 0
		line := fmt.Sprintf("cut %d %d", a, b)
		if !cut {
			line = fmt.Sprintf("heal %d %d", a, b)
		}
		// Drain what is queued, so the first match is this change's.
		for len(p.status) > 0 {
			<-p.status
		}
		start := time.Now()
		if _, _, err := p.post(line); err != nil {
			return nil, err
		}
		for {
			var data []byte
			select {
			case <-ctx.Done():
				return lats, ctx.Err()
			case data = <-p.status:
			}
			var snap labweb.Snapshot
			if err := json.Unmarshal(data, &snap); err != nil {
				return nil, err
			}
			if linkCut(snap, a, b) == cut {
				lats = append(lats, time.Since(start))
				break
			}
		}
	}
	return lats, nil
}

func linkCut(s labweb.Snapshot, a, b cluster.NodeID) bool {
	for _, l := range s.Links {
		if l.From == a && l.To == b {
			return l.Cut
		}
	}
	return false
}

// uiTable is the page benchmark's table.
func uiTable(rows []UIRow) bench.Table {
	t := bench.Table{
		Title:   "lab page: throughput with an attached event stream vs no page (same cluster, alternating slices); event latency",
		Columns: []string{"page_attached", "no_page"},
		Ratios:  []bench.Ratio{{Of: "page_attached", To: "no_page", Plain: true}},
	}
	for _, r := range rows {
		np := math.NaN()
		if r.NoPage != nil {
			np = *r.NoPage
		}
		t.Add(r.Metric, r.Unit, r.PageAttached, np)
	}
	return t
}
