package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSleep(t *testing.T) {
	t.Parallel()
	start := time.Now()
	require.True(t, Sleep(context.Background(), 5*time.Millisecond), "d passed")
	require.GreaterOrEqual(t, time.Since(start), 5*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.False(t, Sleep(ctx, time.Hour), "ctx ended first")
}
