package hold

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/testio"
)

var errBusy = errors.New("busy")

// Acquire: --try tries once; a timeout that passes first gets one last try,
// so that a lock freed meanwhile is taken and timedOut is false.
func TestAcquire(t *testing.T) {
	ctx := context.Background()
	block := func(ctx context.Context) (int, error) { <-ctx.Done(); return 0, ctx.Err() }
	free := func(context.Context) (int, error) { return 1, nil }
	busy := func(context.Context) (int, error) { return 0, errBusy }

	_, timedOut, err := Acquire(ctx, Acquisition{Try: true}, block, busy)
	require.ErrorIs(t, err, errBusy)
	require.False(t, timedOut)
	h, timedOut, err := Acquire(ctx, Acquisition{Timeout: time.Nanosecond, LastTry: time.Second}, block, free)
	require.NoError(t, err)
	require.False(t, timedOut)
	require.Equal(t, 1, h)
	_, timedOut, err = Acquire(ctx, Acquisition{Timeout: time.Millisecond, LastTry: time.Second}, block, busy)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.True(t, timedOut)
	h, _, err = Acquire(ctx, Acquisition{}, free, busy)
	require.NoError(t, err)
	require.Equal(t, 1, h)
}

// A wait stopped before WaitNoticeAfter says nothing; a longer one says so
// once.
func TestWaitNotice(t *testing.T) {
	var out testio.SyncBuffer
	n := &WaitNotice{Out: &out}
	n.Waiting("first")
	n.Stop()
	n.Waiting("after stop")
	time.Sleep(2 * WaitNoticeAfter) // nothing to await: the point is that nothing comes
	require.Empty(t, out.String())

	n = &WaitNotice{Out: &out}
	n.Waiting("waiting for lock x")
	n.Waiting("second")
	require.Eventually(t, func() bool { return out.String() != "" }, 10*time.Second, 10*time.Millisecond)
	n.Stop()
	require.Equal(t, "waiting for lock x\n", out.String())
}

// The notice ends with the wait, before what follows a timeout or an
// interrupt (the last try, the waiter removing its key), which may outlast
// WaitNoticeAfter on a loaded machine and is no wait to report. coordctl
// lock --timeout 200ms printed "waiting for lock" once when its cleanup
// took 550ms.
func TestAcquireEndsTheNoticeWithTheWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    Acquisition
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"timeout", Acquisition{Timeout: 10 * time.Millisecond, LastTry: time.Second}, func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}},
		{"interrupted", Acquisition{}, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 10*time.Millisecond)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out testio.SyncBuffer
			tc.a.Notice = &WaitNotice{Out: &out}
			ctx, cancel := tc.ctx()
			defer cancel()
			n := tc.a.Notice
			stopped := func() bool {
				n.mu.Lock()
				defer n.mu.Unlock()
				return n.done
			}
			// The cleanup after the wait, however slow, finds the notice
			// already ended: its timer can print nothing any more.
			endedBeforeTheCleanup := false
			cleanupAfterTheWait := func(ctx context.Context) (int, error) {
				n.Waiting("waiting for lock x")
				<-ctx.Done()
				endedBeforeTheCleanup = assert.Eventually(t, stopped, 10*time.Second, time.Millisecond, "the notice outlives the wait")
				return 0, ctx.Err()
			}
			_, _, err := Acquire(ctx, tc.a, cleanupAfterTheWait, func(context.Context) (int, error) { return 0, errBusy })
			require.Error(t, err)
			require.True(t, endedBeforeTheCleanup)
			require.Empty(t, out.String())
		})
	}
}
