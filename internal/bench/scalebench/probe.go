package scalebench

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/coordkit/coordkit/internal/bench"
)

// etcd's metric names read by the bench.
const (
	metricWatchers  = "etcd_debugging_mvcc_watcher_total"
	metricKeys      = "etcd_debugging_mvcc_keys_total"
	metricRenewed   = "etcd_debugging_lease_renewed_total"
	metricEvents    = "etcd_debugging_mvcc_events_total"
	metricWALFsync  = "etcd_disk_wal_fsync_duration_seconds"
	metricPuts      = "etcd_mvcc_put_total"
	metricDeletes   = "etcd_mvcc_delete_total"
	metricTxns      = "etcd_mvcc_txn_total"
	metricBackendCo = "etcd_disk_backend_commit_duration_seconds"
	// metricKeepAliveStreams is not etcd's: readMetrics counts into it the
	// LeaseKeepAlive streams the server started (grpc_server_started_total,
	// grpc_method="LeaseKeepAlive", from the gRPC metrics etcd registers).
	metricKeepAliveStreams = "grpc_server_started_total:LeaseKeepAlive"
)

// serverMetrics is a snapshot of etcd's metrics: each counter or gauge
// summed over its label sets; for a histogram its sample count and sum.
type serverMetrics map[string]float64

// readMetrics gathers etcd's metrics from the registry the embedded server
// registered them in (the process's default one: etcd registers there at
// init, it takes no registerer).
func readMetrics() serverMetrics {
	out := serverMetrics{}
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil && len(mfs) == 0 {
		return out
	}
	for _, mf := range mfs {
		name := mf.GetName()
		if name == "grpc_server_started_total" {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "grpc_method" && l.GetValue() == "LeaseKeepAlive" {
						out[metricKeepAliveStreams] += m.GetCounter().GetValue()
					}
				}
			}
			continue
		}
		if !strings.HasPrefix(name, "etcd_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[name] += m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name] += m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_count"] += float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"] += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

// rssBytes is the process's resident set size from /proc/self/status
// (0 where there is no /proc).
func rssBytes() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

// heapBytes is the live heap after a collection.
func heapBytes() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc)
}

// window measures one phase: CPU and wall time between start and stop,
// and, sampled every 200ms, the largest RSS, watcher count and goroutine
// count seen.
type window struct {
	start    time.Time
	cpu0     time.Duration
	before   serverMetrics
	cancel   context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	own      time.Duration // CPU the samples themselves took
	maxRSS   float64
	maxWatch float64
	maxGor   int
	extra    func() // sampled too, if set
}

func startWindow(ctx context.Context, extra func()) *window {
	ctx, cancel := context.WithCancel(ctx)
	before := readMetrics()
	w := &window{start: time.Now(), cpu0: bench.CPUTime(), before: before, cancel: cancel, done: make(chan struct{}), extra: extra}
	w.sample()
	go func() {
		defer close(w.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				w.sample()
			}
		}
	}()
	return w
}

// sample reads the process's figures on a thread of its own, so that the
// CPU the reading takes (gathering every etcd metric costs milliseconds)
// is counted and left out of the window's CPU.
func (w *window) sample() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := threadCPU()
	defer func() {
		own := threadCPU() - t0
		w.mu.Lock()
		w.own += own
		w.mu.Unlock()
	}()
	rss, m, g := rssBytes(), readMetrics(), runtime.NumGoroutine()
	w.mu.Lock()
	w.maxRSS = max(w.maxRSS, rss)
	w.maxWatch = max(w.maxWatch, m[metricWatchers])
	w.maxGor = max(w.maxGor, g)
	w.mu.Unlock()
	if w.extra != nil {
		w.extra()
	}
}

// windowResult is what a window measured.
type windowResult struct {
	wall        time.Duration
	cpu         time.Duration // the process's, less the window's own sampling
	maxRSS      float64
	maxWatchers float64
	maxGor      int
	delta       serverMetrics // after - before, for counters and histograms
}

// cpuPercent is the process's CPU use over the window, in percent of one core.
func (r windowResult) cpuPercent() float64 {
	if r.wall <= 0 {
		return 0
	}
	return 100 * r.cpu.Seconds() / r.wall.Seconds()
}

func (w *window) stop() windowResult {
	w.sample()
	w.cancel()
	<-w.done
	cpu := bench.CPUTime() - w.cpu0
	after := readMetrics()
	d := serverMetrics{}
	for k, v := range after {
		d[k] = v - w.before[k]
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return windowResult{
		wall: time.Since(w.start), cpu: cpu - w.own,
		maxRSS: w.maxRSS, maxWatchers: w.maxWatch, maxGor: w.maxGor, delta: d,
	}
}
