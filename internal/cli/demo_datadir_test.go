package cli

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 25 item 11: a second 'coordctl demo --data-dir D' found the first
// run's fenced resource (floor 3) and exited 5 on its own setup write
// (token 1). Each run gets fresh directories under D now.
func TestDemoDataDirRunTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: plays the story twice")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	for run := 1; run <= 2; run++ {
		res := runInProcess(ctx, nil, "demo", "--story-only", "--data-dir", dir)
		require.Equal(t, exitOK, res.Code, "run %d: %s", run, res.Stderr)
		require.Contains(t, res.Stdout, "409 stale fencing token", "run %d", run)
	}
}
