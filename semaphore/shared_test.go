package semaphore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/semaphore"
)

// slotsHeld reads, in etcd, how many slots of name are held.
func slotsHeld(t *testing.T, ctx context.Context, cli *clientv3.Client, name string) int {
	t.Helper()
	st, err := primitive.ReadSemaphore(ctx, cli, primitive.Config{Kind: primitive.KindSemaphore, Name: name})
	require.NoError(t, err)
	return len(st.Holders)
}

// One Semaphore shared by ten goroutines, limit 10: all ten hold a slot at
// once, each its own (before, the handle took one slot at a time and the
// second Acquire waited for the first Release).
func TestSemaphoreOneHandleManyHolders(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	s := newSem(t, cli, "many", 10)
	const n = 10
	helds := make(chan *semaphore.Held, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			h, err := s.Acquire(ctx)
			if err != nil {
				errs <- err
				return
			}
			helds <- h
		}()
	}
	slots := map[int]bool{}
	var all []*semaphore.Held
	for range n {
		select {
		case h := <-helds:
			require.False(t, slots[h.Slot()], "slot %d granted twice", h.Slot())
			slots[h.Slot()] = true
			all = append(all, h)
		case err := <-errs:
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatalf("only %d of %d goroutines got a slot through one Semaphore", len(all), n)
		}
	}
	require.Equal(t, n, slotsHeld(t, ctx, cli, "many"), "ten holders at once, in etcd")
	// Releasing one leaves the others held.
	require.NoError(t, all[0].Release(ctx))
	for _, h := range all[1:] {
		require.True(t, h.Alive())
	}
	require.Equal(t, n-1, slotsHeld(t, ctx, cli, "many"))
	require.NoError(t, s.Close(), "Close ends them all")
	for _, h := range all[1:] {
		<-h.Context().Done()
	}
}

// Ten goroutines on one handle with limit 3: never more than three holders
// in etcd, and every goroutine gets its turn.
func TestSemaphoreOneHandleLimitHolds(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	s := newSem(t, cli, "three", 3)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		inUse int
		most  int
		errs  []error
	)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := s.Acquire(ctx)
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("goroutine %d: %w", i, err))
				mu.Unlock()
				return
			}
			mu.Lock()
			inUse++
			most = max(most, inUse)
			mu.Unlock()
			if got := slotsHeld(t, ctx, cli, "three"); got > 3 {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%d holders in etcd with limit 3", got))
				mu.Unlock()
			}
			mu.Lock()
			inUse--
			mu.Unlock()
			if err := h.Release(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Empty(t, errs)
	require.LessOrEqual(t, most, 3)
	require.Positive(t, most)
}

// A waiter queued by the previous version (N/queue/<lease hex>, one per
// lease) is still a waiter: a TryAcquire behind it gets ErrNoSlot although
// slots are free, and gets a slot once it left.
func TestSemaphorePreviousQueueLayoutIsAWaiter(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	s := newSem(t, cli, "old", 2)
	h, err := s.Acquire(ctx) // stores the limit
	require.NoError(t, err)
	require.NoError(t, h.Release(ctx))
	lease, err := cli.Grant(ctx, 30)
	require.NoError(t, err)
	oldKey := fmt.Sprintf("old/queue/%x", int64(lease.ID))
	_, err = cli.Put(ctx, oldKey, "waiter of the previous version", clientv3.WithLease(lease.ID))
	require.NoError(t, err)
	_, err = s.TryAcquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrNoSlot)
	require.ErrorContains(t, err, "waiters ahead")
	_, err = cli.Delete(ctx, oldKey)
	require.NoError(t, err)
	h, err = s.TryAcquire(ctx)
	require.NoError(t, err)
	require.NoError(t, h.Release(ctx))
	_, _ = cli.Revoke(context.WithoutCancel(ctx), lease.ID)
}
