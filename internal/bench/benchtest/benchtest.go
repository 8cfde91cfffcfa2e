// Package benchtest holds what the harnesses' tests share: the check of a
// measured value that holds whatever the machine's load.
package benchtest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/bench"
)

// PositiveOrRate checks a measured value: a latency is positive; a rate
// over a short run may be 0 on a loaded machine, never negative.
func PositiveOrRate(t testing.TB, metric, unit string, v float64) {
	t.Helper()
	if bench.HigherIsBetter(unit) {
		require.GreaterOrEqual(t, v, 0.0, metric)
		return
	}
	require.Positive(t, v, metric)
}
