package etcdembed_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/lock"
)

// TestReplaceMember is docs/operations.md's member replacement, step by
// step, on a real three-member cluster: a member is lost (stopped), removed
// (MemberRemove), and a fresh one with an empty data directory takes its
// name and peer URL (MemberAdd, then --initial-cluster-state=existing).
// A lock held across it stays held, the next holder's token is higher, and
// the new member is a full voter: with it and one old member alone (the
// third stopped) the cluster still grants the lock, with a higher token.
func TestReplaceMember(t *testing.T) {
	t.Parallel() // a cluster of its own
	if testing.Short() {
		t.Skip("three-member cluster")
	}
	c := startCluster(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cli := clusterClient(t, c.Endpoints()...)
	waitFor(t, 15*time.Second, "a leader", func() bool { return c.Leader() != 0 })

	// A TTL that outlasts the membership changes' elections on a starved
	// machine (5s was lost once there): the test is about the members, not
	// about keepalives.
	mu, err := lock.New(cli, "jobs/replace", lock.WithTTL(20*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = mu.Close() })
	held, err := mu.Lock(ctx)
	require.NoError(t, err)
	first := held.Token()

	// 1. A follower's machine is lost.
	n := 1
	if c.Leader() == 1 {
		n = 2
	}
	require.NoError(t, c.StopMember(n))

	// 2. etcdctl member remove ID.
	list, err := cli.MemberList(ctx)
	require.NoError(t, err)
	var oldID uint64
	for _, m := range list.Members {
		if m.Name == c.Name(n) {
			oldID = m.ID
		}
	}
	require.NotZero(t, oldID, "member %s in %v", c.Name(n), list.Members)
	untilHealthy(t, func() error { _, err := cli.MemberRemove(ctx, oldID); return err })

	// 3. etcdctl member add NAME --peer-urls=URL, and its
	// ETCD_INITIAL_CLUSTER: every member, the new one under its name.
	var added *clientv3.MemberAddResponse
	untilHealthy(t, func() (err error) { added, err = cli.MemberAdd(ctx, []string{c.PeerURL(n)}); return err })
	require.NotEqual(t, oldID, added.Member.ID, "a removed member's ID never comes back")
	var initial, others []string
	for _, m := range added.Members {
		name := m.Name
		if m.ID == added.Member.ID {
			name = c.Name(n)
		}
		for _, u := range m.PeerURLs {
			initial = append(initial, name+"="+u)
			if m.ID != added.Member.ID {
				others = append(others, name+"="+u)
			}
		}
	}
	require.Len(t, initial, 3)
	require.ErrorIs(t, c.StartFreshMember(ctx, n, strings.Join(others, ",")), etcdembed.ErrBadInitialCluster)

	// 4. Start it with an empty data directory and
	// --initial-cluster-state=existing.
	require.NoError(t, c.StartFreshMember(ctx, n, strings.Join(initial, ",")))
	list, err = cli.MemberList(ctx)
	require.NoError(t, err)
	require.Len(t, list.Members, 3)
	for _, m := range list.Members {
		require.False(t, m.IsLearner)
		require.NotEmpty(t, m.Name, "every member started")
	}

	// The lock was held all along: its lease was kept alive through the
	// change, and its key is still the holder.
	select {
	case <-held.Lost():
		t.Fatal("the lock was lost while a member was replaced")
	default:
	}
	// The new member has caught up: a linearizable read through it alone
	// sees the holder's key.
	fresh := clusterClient(t, c.DirectEndpoint(n))
	resp, err := fresh.Get(ctx, held.Key())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	require.Equal(t, int64(first), resp.Kvs[0].CreateRevision)

	// Locks keep working through the new member, and tokens keep rising.
	require.NoError(t, held.Unlock(ctx))
	second := lockOnce(ctx, t, fresh, first)

	// The new member votes: stop an old one, and the new one with the
	// remaining old one still grants the lock.
	other := 1
	for other == n || other == c.Leader() {
		other++
	}
	require.NoError(t, c.StopMember(other))
	lockOnce(ctx, t, fresh, second)
}

// untilHealthy retries a membership change that etcd refuses as
// "unhealthy cluster": it changes membership only once the members that
// remain have been connected to each other for five seconds
// (etcdserver's HealthInterval), which a cluster just started, or just
// changed, has not. It has no event to wait on, so it polls.
func untilHealthy(t *testing.T, change func() error) {
	t.Helper()
	var err error
	waitFor(t, 30*time.Second, "etcd to accept the membership change", func() bool {
		err = change()
		return !errors.Is(err, rpctypes.ErrUnhealthy)
	})
	require.NoError(t, err)
}

// lockOnce takes and releases the lock through cli and returns its token,
// which must be above previous.
func lockOnce(ctx context.Context, t *testing.T, cli *clientv3.Client, previous fencing.Token) fencing.Token {
	t.Helper()
	mu, err := lock.New(cli, "jobs/replace", lock.WithTTL(5*time.Second))
	require.NoError(t, err)
	defer mu.Close()
	h, err := mu.Lock(ctx)
	require.NoError(t, err)
	require.Greater(t, h.Token(), previous, "tokens keep rising across the replacement")
	require.NoError(t, h.Unlock(ctx))
	return h.Token()
}
