package bench

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the nearest-rank p-quantile (p in [0,1]) of ds: the
// smallest sample with at least a fraction p of the samples at or below
// it, so the 0.99-quantile of 40 samples is the largest. It returns 0 for
// no samples and does not modify ds.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// Ms is d in milliseconds, to the microsecond.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
