package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A session's config is the default one, bounded in memory (docs/lab.md,
// "Memory"), and valid.
func TestDefaultSessionConfig(t *testing.T) {
	c := DefaultSessionConfig()
	require.NoError(t, c.Validate())
	require.Equal(t, 1<<16, c.HistoryInMemory)
	require.Equal(t, 5*time.Second, c.SnapshotInterval)
	require.Equal(t, 50000, c.TimelineIndexSamples)
	d := DefaultConfig()
	c.HistoryInMemory, c.SnapshotInterval, c.TimelineIndexSamples = d.HistoryInMemory, d.SnapshotInterval, d.TimelineIndexSamples
	require.Equal(t, d, c, "otherwise the default")
}
