package labcmd

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coordkit/coordkit/cluster"
)

// Load limits.
const (
	// MaxLoadRate is the highest rate "load R/s" accepts.
	MaxLoadRate = 100000
	// loadWorkers is how many clients a load runs: enough that a rate of
	// a few thousand writes/s is met at a few milliseconds a write, while
	// a stalled cluster holds at most this many operations in flight.
	loadWorkers = 64
	// loadWindow is the span of the live figures (throughput, p50, p99).
	loadWindow = time.Second
	// loadRing bounds the completions kept for the live figures.
	loadRing = 1 << 14
)

// LoadStats are the figures of the write load: its rate, its totals since
// it started, and throughput and latency over the last second. JSON:
// {"running","rate","writes_ok","writes_fail","writes_unknown","writes_per_s",
// "p50_ms","p99_ms"} (not "ok": Output's JSON uses it for the command).
type LoadStats struct {
	Running bool  `json:"running"`
	Rate    int   `json:"rate"`
	OK      int64 `json:"writes_ok"`
	Fail    int64 `json:"writes_fail"`
	Unknown int64 `json:"writes_unknown"`
	// WritesPerS is the writes that succeeded in the last second.
	WritesPerS float64 `json:"writes_per_s"`
	// P50Ms and P99Ms are the latencies of those writes.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// LoadResult is the result of load. JSON: LoadStats's fields.
type LoadResult struct {
	LoadStats
	// Changed is set by "load R" and "load off"; a bare "load" reports.
	Changed bool `json:"-"`
}

// WriteText writes what changed, or the live figures.
func (l LoadResult) WriteText(w io.Writer) error {
	var err error
	switch {
	case l.Changed && l.Running:
		_, err = fmt.Fprintf(w, "load on: %d writes/s of generated puts\n", l.Rate)
	case l.Changed:
		_, err = fmt.Fprintf(w, "load off: %d ok, %d fail, %d unknown\n", l.OK, l.Fail, l.Unknown)
	case l.Running:
		_, err = fmt.Fprintf(w, "load %d writes/s: last second %.0f writes/s ok, p50 %.2fms, p99 %.2fms; %d ok, %d fail, %d unknown\n",
			l.Rate, l.WritesPerS, l.P50Ms, l.P99Ms, l.OK, l.Fail, l.Unknown)
	default:
		_, err = fmt.Fprintf(w, "load off: %d ok, %d fail, %d unknown\n", l.OK, l.Fail, l.Unknown)
	}
	return err
}

func parseLoad(_ string, args []string) (Command, error) {
	const usage = "load R[/s] | load off | load"
	switch {
	case len(args) == 0:
		return Command{}, nil
	case len(args) != 1:
		return Command{}, usagef("%s", usage)
	case args[0] == "off":
		return Command{LoadOff: true}, nil
	}
	n, err := strconv.Atoi(strings.TrimSuffix(args[0], "/s"))
	if err != nil || n < 1 || n > MaxLoadRate {
		return Command{}, usagef("%s: R must be 1 to %d writes/s", usage, MaxLoadRate)
	}
	return Command{Rate: n}, nil
}

func (s *Session) load(_ context.Context, cmd Command) (Result, error) {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	switch {
	case cmd.LoadOff:
		if s.ld == nil {
			return LoadResult{Changed: true, LoadStats: s.lastLoad}, nil
		}
		s.lastLoad = s.ld.stop()
		s.ld = nil
		return LoadResult{Changed: true, LoadStats: s.lastLoad}, nil
	case cmd.Rate > 0:
		if s.ld != nil {
			s.ld.setRate(cmd.Rate)
		} else {
			s.ld = startLoader(s.c, cmd.Rate)
		}
		return LoadResult{Changed: true, LoadStats: LoadStats{Running: true, Rate: cmd.Rate}}, nil
	}
	if s.ld == nil {
		return LoadResult{LoadStats: s.lastLoad}, nil
	}
	return LoadResult{LoadStats: s.ld.stats(time.Now())}, nil
}

// Load returns the write load's figures now; it is safe to call while
// another goroutine runs commands.
func (s *Session) Load() LoadStats {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if s.ld == nil {
		return s.lastLoad
	}
	return s.ld.stats(time.Now())
}

// Close stops the write load, if any, and waits for its clients to return.
// The session stays usable.
func (s *Session) Close() {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if s.ld != nil {
		s.lastLoad = s.ld.stop()
		s.ld = nil
	}
}

// completion is one write of the load as the live figures see it.
type completion struct {
	at      time.Time
	latency time.Duration
	ok      bool
}

// loader issues generated puts at a rate from loadWorkers clients. It is
// open-loop up to a backlog of one second: when the cluster is slower than
// the rate (no quorum), writes due beyond that backlog are not issued.
type loader struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu             sync.Mutex
	rate           int
	ok, fail, unkn int64
	ring           []completion // circular, loadRing long
	next           int
	full           bool
	genMu          sync.Mutex
	gen            *cluster.Workload
}

func startLoader(c *cluster.Cluster, rate int) *loader {
	ctx, cancel := context.WithCancel(context.Background())
	l := &loader{cancel: cancel, rate: rate, ring: make([]completion, loadRing),
		gen: cluster.NewWorkload(c.Config().Seed^0x10ad, 1000)}
	tokens := make(chan struct{}, MaxLoadRate)
	l.wg.Add(1)
	go l.pace(ctx, tokens)
	for i := 0; i < loadWorkers; i++ {
		cl := c.NewClient(0)
		l.wg.Add(1)
		go l.work(ctx, cl, tokens)
	}
	return l
}

func (l *loader) setRate(r int) {
	l.mu.Lock()
	l.rate = r
	l.mu.Unlock()
}

// pace hands out one token per write due, every few milliseconds.
func (l *loader) pace(ctx context.Context, tokens chan<- struct{}) {
	defer l.wg.Done()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	last := time.Now()
	var owed float64
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			l.mu.Lock()
			rate := l.rate
			l.mu.Unlock()
			owed += float64(rate) * now.Sub(last).Seconds()
			last = now
			// At most a second's backlog: writes due beyond it while the
			// cluster stalls are not issued. Only pace sends, so the
			// length check cannot race into a blocking send.
			for ; owed >= 1; owed-- {
				if len(tokens) >= rate {
					owed = 0
					break
				}
				tokens <- struct{}{}
			}
		}
	}
}

func (l *loader) work(ctx context.Context, cl *cluster.Client, tokens <-chan struct{}) {
	defer l.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tokens:
		}
		l.genMu.Lock()
		op := l.gen.Put()
		l.genMu.Unlock()
		r, _ := cl.Do(ctx, op)
		l.mu.Lock()
		switch r.Outcome {
		case cluster.OutcomeOK:
			l.ok++
		case cluster.OutcomeFail:
			l.fail++
		default:
			l.unkn++
		}
		l.ring[l.next] = completion{at: time.Now(), latency: r.Latency, ok: r.Outcome == cluster.OutcomeOK}
		l.next = (l.next + 1) % len(l.ring)
		if l.next == 0 {
			l.full = true
		}
		l.mu.Unlock()
	}
}

func (l *loader) stats(now time.Time) LoadStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := LoadStats{Running: true, Rate: l.rate, OK: l.ok, Fail: l.fail, Unknown: l.unkn}
	n := l.next
	if l.full {
		n = len(l.ring)
	}
	var lats []time.Duration
	for i := 0; i < n; i++ {
		c := l.ring[(l.next-1-i+len(l.ring))%len(l.ring)]
		if now.Sub(c.at) > loadWindow {
			break
		}
		if c.ok {
			lats = append(lats, c.latency)
		}
	}
	st.WritesPerS = float64(len(lats)) / loadWindow.Seconds()
	if len(lats) > 0 {
		sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
		st.P50Ms = ms(lats[int(0.50*float64(len(lats)-1))])
		st.P99Ms = ms(lats[int(0.99*float64(len(lats)-1))])
	}
	return st
}

// stop ends the load, waits for its clients and returns its totals.
func (l *loader) stop() LoadStats {
	l.cancel()
	l.wg.Wait()
	st := l.stats(time.Now())
	st.Running, st.Rate, st.WritesPerS, st.P50Ms, st.P99Ms = false, 0, 0, 0, 0
	return st
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
