package etcddial

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/nettest"
)

// Issue 31, item 3: endpoints of two etcd clusters behind one --endpoints
// (a typo, a stale config) gave two holders at once, with tokens of two
// clusters. Dial refuses them, naming each endpoint and its cluster.
func TestDialRefusesEndpointsOfTwoClusters(t *testing.T) {
	t.Parallel()
	a, b := etcdtest.Start(t), etcdtest.Start(t)
	eps := []string{a.Endpoints()[0], b.Endpoints()[0]}
	cli, err := Dial(context.Background(), Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	if cli != nil {
		cli.Close()
	}
	require.ErrorIs(t, err, ErrClusterMismatch)
	for _, ep := range eps {
		require.Contains(t, err.Error(), ep)
	}
	require.Contains(t, err.Error(), "give --endpoints of one cluster")
}

// An endpoint of another cluster that answers only after Dial (here: the
// client moved to it) fails every request with ErrClusterMismatch instead
// of answering from the other cluster.
func TestAnswerFromAnotherClusterAfterDialFails(t *testing.T) {
	t.Parallel()
	a, b := etcdtest.Start(t), etcdtest.Start(t)
	cli, err := Dial(context.Background(), Config{Endpoints: a.Endpoints(), DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = cli.Put(ctx, "k", "a")
	require.NoError(t, err)

	cli.SetEndpoints(b.Endpoints()...)
	require.Eventually(t, func() bool {
		_, err = cli.Get(ctx, "k")
		return err != nil
	}, 10*time.Second, 20*time.Millisecond, "answers from the other cluster must fail")
	require.ErrorIs(t, err, ErrClusterMismatch)
	require.Contains(t, err.Error(), "at dial")
}

func TestSameCluster(t *testing.T) {
	require.NoError(t, sameCluster([]endpointStatus{{endpoint: "a", cluster: 7}, {endpoint: "b", cluster: 7}}))
	err := sameCluster([]endpointStatus{{endpoint: "a", cluster: 7}, {endpoint: "c", cluster: 9}, {endpoint: "b", cluster: 7}})
	require.ErrorIs(t, err, ErrClusterMismatch)
	require.Contains(t, err.Error(), fmt.Sprintf("a, b (cluster %x) and c (cluster %x)", 7, 9))
}

// One member down (nothing listens at its endpoint) does not make Dial
// wait statusGrace for it after the others answered: it did, so every
// command paid half a second while a member was down. Waiting was every
// time; the fastest of three dials is compared, so that one stall of a
// machine busy with the rest of the suite (a dial once took 1.1 s) does
// not pass for it.
func TestDialDoesNotWaitForAnEndpointNothingListensAt(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	for _, eps := range [][]string{{srv.Endpoints()[0], nettest.ClosedAddr(t)}, {nettest.ClosedAddr(t), srv.Endpoints()[0]}} {
		var tooks []time.Duration
		for range 3 {
			start := time.Now()
			cli, err := Dial(context.Background(), Config{Endpoints: eps, DialTimeout: 5 * time.Second})
			tooks = append(tooks, time.Since(start))
			require.NoError(t, err, "%v", eps)
			require.NoError(t, cli.Close())
			if tooks[len(tooks)-1] < statusGrace {
				break
			}
		}
		t.Logf("%v: Dial took %v", eps, tooks)
		require.Less(t, slices.Min(tooks), statusGrace, "%v: Dial waited for the endpoint nothing listens at", eps)
	}
}
