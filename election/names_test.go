package election_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/semaphore"
	"github.com/coordkit/coordkit/session"
)

// An election counts as candidates only keys of its layout, NAME/<lease
// hex>: the keys of a name below it (a lock named nest/child) are another
// name's, and are neither its leader, nor a candidate, nor the
// predecessor a campaign waits for.
func TestElectionNestedNamesDoNotAlias(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)

	child, err := lock.New(srv.Client(t), "nest/child")
	require.NoError(t, err)
	defer child.Close()
	hc, err := child.Lock(ctx)
	require.NoError(t, err)

	e := newElection(t, cli, "nest")
	_, err = e.Leader(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader, "nest/child's key is no leader of nest")
	cs, err := e.Candidates(ctx)
	require.NoError(t, err)
	require.Empty(t, cs, "nest/child's key is no candidate of nest")
	obs := e.Observe(ctx)
	o := await(t, obs, "first observation")
	require.NoError(t, o.Err)
	require.Nil(t, o.Leader, "observe shows no leader, not nest/child's key")

	// Campaigning does not wait for the nested key.
	l := await(t, campaignAsync(ctx, newElection(t, srv.Client(t), "nest"), "a"), "campaign")
	require.NoError(t, l.err, "a holder of nest/child must not block the election nest")
	o = await(t, obs, "leader a")
	require.NotNil(t, o.Leader)
	require.Equal(t, "a", o.Leader.Value)
	cur, err := e.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, l.l.Token(), cur.Token)

	// A waiter whose immediate predecessor by create revision is a nested
	// key waits for a, and leads once a resigns.
	child2, err := lock.New(srv.Client(t), "nest/child2")
	require.NoError(t, err)
	defer child2.Close()
	hc2, err := child2.Lock(ctx)
	require.NoError(t, err)
	b := campaignAsync(ctx, newElection(t, srv.Client(t), "nest"), "b")
	require.Eventually(t, func() bool {
		cs, err := e.Candidates(ctx)
		return err == nil && len(cs) == 2
	}, waitLimit, 5*time.Millisecond, "b queued behind a")
	select {
	case r := <-b:
		t.Fatalf("b campaigned past the leader a: %v", r.err)
	default:
	}
	require.NoError(t, l.l.Resign(ctx))
	rb := await(t, b, "b leads")
	require.NoError(t, rb.err)
	require.Greater(t, rb.l.Token(), l.l.Token())
	o = await(t, obs, "observe")
	for o.Leader == nil || o.Leader.Value != "b" {
		o = await(t, obs, "leader b")
	}
	require.NoError(t, rb.l.Resign(ctx))
	require.NoError(t, hc.Unlock(ctx))
	require.NoError(t, hc2.Unlock(ctx))
}

// A semaphore's name, or a read-write lock's, is not an election's: Leader,
// Candidates, Observe and Campaign say so, naming the key that shows it,
// instead of reporting the limit key or a reader as the leader.
func TestElectionRefusesSemaphoreAndRWLockNames(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)

	s, err := semaphore.New(srv.Client(t), "mixed", 2)
	require.NoError(t, err)
	defer s.Close()
	h, err := s.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, h.Release(ctx)) // the lease-less limit key stays

	rw, err := lock.NewRWMutex(srv.Client(t), "shared")
	require.NoError(t, err)
	defer rw.Close()
	r, err := rw.RLock(ctx)
	require.NoError(t, err)

	for name, key := range map[string]string{"mixed": "mixed/limit", "shared": r.Key()} {
		e := newElection(t, cli, name)
		_, err := e.Leader(ctx)
		require.ErrorIs(t, err, session.ErrNameInUse, name)
		require.ErrorContains(t, err, key)
		_, err = e.Candidates(ctx)
		require.ErrorIs(t, err, session.ErrNameInUse, name)
		o := await(t, e.Observe(ctx), "observation of "+name)
		require.ErrorIs(t, o.Err, session.ErrNameInUse, name)
		require.Nil(t, o.Leader)
		_, err = e.Campaign(ctx, "c")
		require.ErrorIs(t, err, session.ErrNameInUse, name)
		require.ErrorContains(t, err, key)
	}
	resp, err := cli.Get(ctx, "mixed/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "the refused campaign left no key under mixed/")
	require.Equal(t, "mixed/limit", string(resp.Kvs[0].Key))
	require.NoError(t, r.Unlock(ctx))
}
