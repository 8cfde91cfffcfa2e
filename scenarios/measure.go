package scenarios

import (
	"context"
	"time"
)

// sleepCtx waits d or until ctx ends: scenarios let a workload run for a
// while between faults. (Latencies print with cluster.Ms and quantiles come
// from cluster.Percentile, the module's one of each.)
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
