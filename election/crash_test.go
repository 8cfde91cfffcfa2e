package election_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/primitive"
)

// The candidate right behind a leader that crashed (its client closed, its
// lease not revoked) revokes the leader's lease once LeaseTimeToLive
// proves it expired, rather than wait for etcd's expiry check; etcd's
// check may still come first now and then, so up to three crashes are
// tried (before primitive.WatchExpiry the candidate never revoked: this
// test failed).
func TestElectionCrashedLeaderRevokedByTheNext(t *testing.T) {
	t.Parallel()
	ns, cli := etcd.StartWithClient(t)
	next := newElection(t, cli, "crash", election.WithTTL(2*time.Second))
	revoked := make(chan string, 3)
	ctx := primitive.WithTrace(testCtx(t), &primitive.Trace{OnRevoke: func(key string) { revoked <- key }})
	for range 3 {
		leaderCli := ns.Client(t)
		_, err := newElection(t, leaderCli, "crash", election.WithTTL(2*time.Second)).Campaign(testCtx(t), "crashing")
		require.NoError(t, err)
		got := campaignAsync(ctx, next, "next")
		waitCandidates(t, cli, "crash/", 2)
		require.NoError(t, leaderCli.Close())
		r := await(t, got, "leadership after the crash")
		require.NoError(t, r.err)
		require.NoError(t, r.l.Resign(testCtx(t)))
		if len(revoked) > 0 {
			return
		}
	}
	t.Fatal("the next candidate never revoked a crashed leader's lease")
}
