package etcdembed_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/internal/etcdembed"
)

func startCluster(t *testing.T, dir string) *etcdembed.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := etcdembed.StartCluster(ctx, etcdembed.ClusterConfig{DataDir: dir, UnsafeNoFsync: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func clusterClient(t *testing.T, eps ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialKeepAliveTime: time.Second, DialKeepAliveTimeout: time.Second,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// waitFor polls cond (a cluster state, which has no event to wait on) until
// it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func putOK(ctx context.Context, cli *clientv3.Client, k, v string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := cli.Put(ctx, k, v)
	return err
}

func TestClusterFaults(t *testing.T) {
	t.Parallel() // a member or cluster of its own
	if testing.Short() {
		t.Skip("three-member cluster")
	}
	dir := t.TempDir()
	c := startCluster(t, dir)
	ctx := context.Background()
	require.Len(t, c.Endpoints(), 3)
	cli := clusterClient(t, c.Endpoints()...)
	// A leader first: on a starved machine the first election outlasted
	// putOK's 3s.
	waitFor(t, 15*time.Second, "a leader", func() bool { return c.Leader() != 0 })
	require.NoError(t, putOK(ctx, cli, "k", "v1"))

	t.Run("isolate the leader elects another", func(t *testing.T) {
		old := c.Leader()
		require.NoError(t, c.Isolate(old))
		waitFor(t, 15*time.Second, "a new leader", func() bool { l := c.Leader(); return l != 0 && l != old })
		st := c.Status()
		require.Contains(t, st.Faults, etcdembed.LinkFault{Kind: "isolated", Member: old})
		// A client of the isolated member alone cannot write.
		lone := clusterClient(t, c.Endpoints()[old-1])
		require.Error(t, putOK(ctx, lone, "k", "lone"))
		// Nor does the isolated member hear the others: a write through
		// them does not reach its local (serializable) state.
		var others []string
		for i, e := range c.Endpoints() {
			if i+1 != old {
				others = append(others, e)
			}
		}
		require.NoError(t, putOK(ctx, clusterClient(t, others...), "k", "unseen"))
		require.NoError(t, putOK(ctx, clusterClient(t, others...), "k2", "after"))
		direct := clusterClient(t, c.DirectEndpoint(old))
		gctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		resp, err := direct.Get(gctx, "k2", clientv3.WithSerializable())
		require.NoError(t, err)
		require.Empty(t, resp.Kvs, "the isolated member applied a write made after it was isolated")
		c.Heal()
		require.Empty(t, c.Status().Faults)
		waitFor(t, 15*time.Second, "the old leader's client to write again", func() bool { return putOK(ctx, lone, "k", "v2") == nil })
	})

	t.Run("client blackhole cuts only that member's clients", func(t *testing.T) {
		require.NoError(t, c.BlackholeClient(1))
		require.Error(t, putOK(ctx, clusterClient(t, c.Endpoints()[0]), "k", "x"))
		require.NoError(t, putOK(ctx, clusterClient(t, c.Endpoints()[1]), "k", "v3"))
		c.Heal()
	})

	t.Run("stop two loses quorum, restart restores it", func(t *testing.T) {
		require.NoError(t, c.StopMember(2))
		require.ErrorIs(t, c.StopMember(2), etcdembed.ErrMemberStopped)
		require.NoError(t, c.StopMember(3))
		require.Equal(t, []int{1}, c.Running())
		one := clusterClient(t, c.Endpoints()[0])
		require.Error(t, putOK(ctx, one, "k", "noquorum"))
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, c.StartMember(sctx, 2))
		require.ErrorIs(t, c.StartMember(sctx, 2), etcdembed.ErrMemberRunning)
		waitFor(t, 15*time.Second, "writes after restart", func() bool { return putOK(ctx, one, "k", "v4") == nil })
		require.NoError(t, c.StartMember(sctx, 3))
		resp, err := clusterClient(t, c.Endpoints()[2]).Get(sctx, "k")
		require.NoError(t, err)
		require.Equal(t, "v4", string(resp.Kvs[0].Value))
	})

	t.Run("delay and bad indexes", func(t *testing.T) {
		require.NoError(t, c.DelayLink(1, 2, 20*time.Millisecond))
		require.Equal(t, []etcdembed.LinkFault{{Kind: "delay", From: 1, To: 2, Ms: 20}}, c.Status().Faults)
		require.NoError(t, putOK(ctx, cli, "k", "v5"))
		require.NoError(t, c.DelayLink(1, 2, 0))
		require.Empty(t, c.Status().Faults)
		require.NoError(t, c.CutLink(3, 1))
		require.Equal(t, []etcdembed.LinkFault{{Kind: "cut", From: 3, To: 1}}, c.Status().Faults)
		// One cut link leaves a quorum, but not every member can serve: if
		// 3 leads, member 1 hears nothing from it and cannot apply, so a put
		// through 1 hangs (cli may be connected to 1; it failed once so).
		// Member 2 hears both others: a put through it commits with either
		// as leader, once any election the cut sets off is over.
		two := clusterClient(t, c.Endpoints()[1])
		waitFor(t, 15*time.Second, "a write through member 2 with link 3->1 cut", func() bool { return putOK(ctx, two, "k", "v5") == nil })
		c.Heal()
		require.ErrorIs(t, c.Isolate(4), etcdembed.ErrNoMember)
		require.ErrorIs(t, c.DelayLink(2, 2, time.Millisecond), etcdembed.ErrNoMember)
	})

	t.Run("a restart on the same directory keeps the data", func(t *testing.T) {
		c.Close()
		c2 := startCluster(t, dir)
		resp, err := clusterClient(t, c2.Endpoints()...).Get(ctx, "k")
		require.NoError(t, err)
		require.Equal(t, "v5", string(resp.Kvs[0].Value))
	})
}

func TestClusterClientURLs(t *testing.T) {
	_, err := etcdembed.StartCluster(context.Background(), etcdembed.ClusterConfig{
		DataDir: t.TempDir(), ClientURLs: []string{"http://127.0.0.1:1", "http://127.0.0.1:2"},
	})
	require.ErrorContains(t, err, "2 client URLs for 3 members")
	_, err = etcdembed.StartCluster(context.Background(), etcdembed.ClusterConfig{Size: 9, DataDir: t.TempDir()})
	require.ErrorContains(t, err, "want 1..7")
}

// A second cluster on a data directory in use fails at once with
// ErrDataDirInUse, as a single member does (issue 11, item 1).
func TestStartClusterOnDataDirInUseFailsAtOnce(t *testing.T) {
	t.Parallel() // a member or cluster of its own
	dir := t.TempDir()
	c := startCluster(t, dir)
	_, err := etcdembed.StartCluster(context.Background(), etcdembed.ClusterConfig{DataDir: dir, UnsafeNoFsync: true})
	require.ErrorIs(t, err, etcdembed.ErrDataDirInUse)
	require.Len(t, c.Endpoints(), 3, "the first cluster is untouched")
}
