package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/session"
)

// A lock's loss watch starts primitive.LossWatchDelay (10ms) into the hold,
// so an uncontended lock+unlock opens none; a key deleted behind the
// holder's back right after the grant is still reported, by the read that
// covers the watch's gap, within the bound session/doc.go states: 150ms
// from the delete.
func TestLockForeignDeleteRightAfterGrantReportedWithinBound(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	m := newMutex(t, cli, "foreign")
	ctx := testCtx(t)
	var worst time.Duration
	for range 5 {
		h, err := m.Lock(ctx)
		require.NoError(t, err)
		_, err = cli.Delete(ctx, h.Key())
		require.NoError(t, err)
		deleted := time.Now()
		recv(t, h.Lost(), "the loss")
		worst = max(worst, time.Since(deleted))
		require.ErrorIs(t, h.Err(), session.ErrKeyGone)
		require.ErrorIs(t, h.Unlock(context.Background()), session.ErrNotHeld)
	}
	t.Logf("slowest report: %s after the delete", worst)
	require.LessOrEqual(t, worst, 150*time.Millisecond)
}
