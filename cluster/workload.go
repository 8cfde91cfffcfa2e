package cluster

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand"
	"slices"
	"sync"
	"time"
)

// Workload generates client operations from a seed: the same seed gives
// the same operations.
type Workload struct {
	rng  *rand.Rand
	keys int
	seq  int
}

// NewWorkload returns a generator over keys distinct keys (k0, k1, ...).
func NewWorkload(seed int64, keys int) *Workload {
	if keys < 1 {
		keys = 1
	}
	return &Workload{rng: rand.New(rand.NewSource(seed)), keys: keys}
}

// Put returns the next generated put.
func (w *Workload) Put() Op {
	w.seq++
	return Op{Kind: OpPut, Key: fmt.Sprintf("k%d", w.rng.Intn(w.keys)), Value: fmt.Sprintf("v%d", w.seq)}
}

// Mixed returns the next generated operation: reads (in mode) with
// probability readFrac, else puts, with a few cas and delete.
func (w *Workload) Mixed(readFrac float64, mode ReadMode) Op {
	w.seq++
	key := fmt.Sprintf("k%d", w.rng.Intn(w.keys))
	switch x := w.rng.Float64(); {
	case x < readFrac:
		return Op{Kind: OpGet, Key: key, Mode: mode}
	case x < readFrac+(1-readFrac)*0.1:
		return Op{Kind: OpCAS, Key: key, Old: fmt.Sprintf("v%d", w.seq-1-w.rng.Intn(3)), New: fmt.Sprintf("v%d", w.seq)}
	case x < readFrac+(1-readFrac)*0.15:
		return Op{Kind: OpDelete, Key: key}
	default:
		return Op{Kind: OpPut, Key: key, Value: fmt.Sprintf("v%d", w.seq)}
	}
}

// WriteStats summarises a run of writes.
type WriteStats struct {
	Writes      int           `json:"writes"`
	OK          int           `json:"ok"`
	Fail        int           `json:"fail"`
	Unknown     int           `json:"unknown"`
	Elapsed     time.Duration `json:"-"`
	Seconds     float64       `json:"seconds"`
	WritesPerS  float64       `json:"writes_per_s"`
	P50         time.Duration `json:"-"`
	P99         time.Duration `json:"-"`
	P50Ms       float64       `json:"p50_ms"`
	P99Ms       float64       `json:"p99_ms"`
	Concurrency int           `json:"concurrency"`
}

// WriteSimple prints the stats as one line.
func (s WriteStats) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%d writes (%d ok, %d fail, %d unknown) by %d writers in %.2fs: %.0f writes/s, p50 %.2fms, p99 %.2fms\n",
		s.Writes, s.OK, s.Fail, s.Unknown, s.Concurrency, s.Seconds, s.WritesPerS, s.P50Ms, s.P99Ms)
	return err
}

// BenchWrites issues n generated puts (seeded by the cluster's seed) from
// concurrency clients, each placed next to near (0: not placed), and
// reports throughput and latency. It stops early when ctx ends. A positive
// d bounds the run by time instead of count (n is then a cap; 0: none).
func (c *Cluster) BenchWrites(ctx context.Context, n, concurrency int, d time.Duration, near NodeID) WriteStats {
	if concurrency < 1 {
		concurrency = 1
	}
	if n <= 0 && d <= 0 {
		return WriteStats{Concurrency: concurrency}
	}
	w := NewWorkload(c.cfg.Seed, 1000)
	var mu sync.Mutex
	next := func() (Op, bool) {
		mu.Lock()
		defer mu.Unlock()
		if n > 0 && w.seq >= n {
			return Op{}, false
		}
		return w.Put(), true
	}
	var deadline time.Time
	if d > 0 {
		deadline = time.Now().Add(d)
	}
	st := WriteStats{Concurrency: concurrency}
	var lats []time.Duration
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < concurrency; i++ {
		cl := c.NewClient(near)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			var ok, fail, unk int
			for ctx.Err() == nil && (deadline.IsZero() || time.Now().Before(deadline)) {
				op, more := next()
				if !more {
					break
				}
				r, _ := cl.Do(ctx, op)
				switch r.Outcome {
				case OutcomeOK:
					ok++
					mine = append(mine, r.Latency)
				case OutcomeFail:
					fail++
				default:
					unk++
				}
			}
			mu.Lock()
			st.OK += ok
			st.Fail += fail
			st.Unknown += unk
			lats = append(lats, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	st.Elapsed = time.Since(start)
	st.Writes = st.OK + st.Fail + st.Unknown
	st.Seconds = st.Elapsed.Seconds()
	if st.Seconds > 0 {
		st.WritesPerS = float64(st.OK) / st.Seconds
	}
	st.P50, st.P99 = Percentile(lats, 0.50), Percentile(lats, 0.99)
	st.P50Ms, st.P99Ms = Ms(st.P50), Ms(st.P99)
	return st
}

// Ms is d in milliseconds, to the microsecond: how the lab, its scenarios
// and the benchmarks print latencies.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Sleep waits d or until ctx ends, and reports whether d passed: how the
// scenarios and the benchmarks let a workload run for a while. It is the
// module's one (scenarios, public, cannot import an internal package).
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Percentile returns the nearest-rank p-quantile (p in [0,1]) of ds: the
// smallest sample with at least a fraction p of the samples at or below
// it, so the 0.99-quantile of 40 samples is the largest. It returns 0 for
// no samples and does not modify ds. It is the one percentile of the
// module: scenarios and internal/bench use it.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}
