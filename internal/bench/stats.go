package bench

import (
	"context"
	"syscall"
	"time"

	"github.com/coordkit/coordkit/cluster"
)

// Percentile is cluster.Percentile, the module's one percentile: the
// nearest-rank p-quantile (p in [0,1]) of ds, 0 for no samples.
func Percentile(ds []time.Duration, p float64) time.Duration { return cluster.Percentile(ds, p) }

// Ms is cluster.Ms: d in milliseconds, to the microsecond.
func Ms(d time.Duration) float64 { return cluster.Ms(d) }

// Sleep is cluster.Sleep: it waits d or until ctx ends and reports
// whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool { return cluster.Sleep(ctx, d) }

// Window returns a context that is cancelled d from now (or with ctx) and
// its cancel. Unlike context.WithTimeout it carries no deadline: a deadline
// travels with every etcd request, and etcd may answer "request timed out"
// a moment before the caller's own context reports that the window ended,
// turning the end of a measurement into a spurious error.
func Window(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancel(ctx)
	t := time.AfterFunc(d, cancel)
	return wctx, func() { t.Stop(); cancel() }
}

// CPUTime is the CPU time (user and system) this process has used so far
// (getrusage RUSAGE_SELF); 0 where that fails.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
