package scenarios

import (
	"context"
	"time"
)

// The scenarios' one copy of these two helpers; package cluster has the
// percentile (cluster.Percentile).

// ms returns d in fractional milliseconds, the unit of the reports' metrics.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// sleepCtx waits d or until ctx ends: scenarios let a workload run for a
// while between faults.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
