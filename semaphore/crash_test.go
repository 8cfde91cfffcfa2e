package semaphore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/semaphore"
)

// The head of the queue revokes the lease of a holder that crashed (its
// client closed, its lease not revoked) once LeaseTimeToLive proves it
// expired, rather than wait for etcd's expiry check; etcd's check may
// still come first now and then, so up to three crashes are tried (before
// primitive.WatchExpiry the waiter never revoked: this test failed).
func TestSemaphoreCrashedHolderRevokedByTheHead(t *testing.T) {
	t.Parallel()
	ns, cli := etcd.StartWithClient(t)
	waiter, waiting := waitingSem(t, cli, "crash", 1, semaphore.WithTTL(2*time.Second))
	revoked := make(chan string, 3)
	ctx := primitive.WithTrace(testCtx(t), &primitive.Trace{OnRevoke: func(key string) { revoked <- key }})
	for range 3 {
		holderCli := ns.Client(t)
		_, err := newSem(t, holderCli, "crash", 1, semaphore.WithTTL(2*time.Second)).Acquire(testCtx(t))
		require.NoError(t, err)
		got := acquireAsync(ctx, waiter)
		recv(t, waiting, "the waiter waits")
		require.NoError(t, holderCli.Close())
		r := recv(t, got, "the slot after the crash")
		require.NoError(t, r.err)
		require.NoError(t, r.h.Release(testCtx(t)))
		if len(revoked) > 0 {
			return
		}
	}
	t.Fatal("the waiter never revoked a crashed holder's lease")
}
