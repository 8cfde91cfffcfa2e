package election_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

func coordElection(t *testing.T, cli *clientv3.Client, name string, p election.Policy, a election.Attributes, opts ...election.Option) *election.Election {
	t.Helper()
	return newElection(t, cli, name, append([]election.Option{election.WithPolicy(p), election.WithAttributes(a)}, opts...)...)
}

// leaderLog records every leader an observer sees, in order.
type leaderLog struct {
	ch   <-chan election.Observation
	seen []string
}

func observeLeaders(t *testing.T, ctx context.Context, cli *clientv3.Client, name string) *leaderLog {
	t.Helper()
	e := newElection(t, cli, name)
	octx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	ch := e.Observe(octx)
	// The first observation is the state when Observe first read: wait for
	// it before anyone campaigns, or a leader that came and went before
	// that read would be missing from the log (seen once under load).
	first := await(t, ch, "the first observation")
	require.NoError(t, first.Err)
	require.Nil(t, first.Leader, "observe before anyone campaigns")
	return &leaderLog{ch: ch}
}

// until reads observations until the leader's value is want; it returns
// the values seen on the way ("" for no leader).
func (g *leaderLog) until(t *testing.T, want string) []string {
	t.Helper()
	for {
		obs := await(t, g.ch, "leader "+want)
		require.NoError(t, obs.Err)
		v := ""
		if obs.Leader != nil {
			v = obs.Leader.Value
		}
		if len(g.seen) == 0 && v == "" {
			continue // before anyone campaigned
		}
		if len(g.seen) == 0 || g.seen[len(g.seen)-1] != v {
			g.seen = append(g.seen, v)
		}
		if v == want {
			return g.seen
		}
	}
}

func TestCoordinatedFirstComeWritesOnlyEtcdLayout(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	l, err := newElection(t, cli, "plain").Campaign(ctx, "node-1")
	require.NoError(t, err)
	defer l.Resign(ctx)
	resp, err := cli.Get(ctx, "", clientv3.WithFromKey())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "a first-come election without attributes writes one key")
	require.Equal(t, fmt.Sprintf("plain/%x", l.Lease()), string(resp.Kvs[0].Key))
	require.Equal(t, "node-1", string(resp.Kvs[0].Value))
}

func TestCoordinatedNewRejects(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	_, err := election.New(cli, "x", election.WithPolicy("random"))
	require.ErrorIs(t, err, election.ErrBadPolicy)
	_, err = election.New(cli, "x", election.WithAttributes(election.Attributes{Version: "latest"}))
	require.ErrorIs(t, err, election.ErrBadVersion)
	_, err = election.New(cli, "x\x00y", election.WithPolicy(election.PolicyPriority))
	require.ErrorIs(t, err, session.ErrInvalidName)
}

// Candidates lists ours with attributes and a concurrency.Election as
// foreign, in queue order; the side keys are invisible to etcd's client.
func TestCoordinatedCandidates(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	a := coordElection(t, cli, "cands", election.PolicyNewestVersion, election.Attributes{Priority: 2, Version: "1.0.0", Labels: map[string]string{"zone": "a"}})
	la, err := a.Campaign(ctx, "a")
	require.NoError(t, err)
	defer la.Resign(ctx)
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	require.NoError(t, err)
	defer sess.Close()
	theirs := concurrency.NewElection(sess, "cands")
	go func() { _ = theirs.Campaign(ctx, "etcd") }()
	waitCandidates(t, cli, "cands/", 2)
	b := coordElection(t, cli, "cands", election.PolicyNewestVersion, election.Attributes{ID: "b-id", Version: "0.9.0"})
	bres := campaignAsync(ctx, b, "b")
	waitCandidates(t, cli, "cands/", 3)

	cs, err := b.Candidates(ctx)
	require.NoError(t, err)
	require.Len(t, cs, 3)
	require.True(t, cs[0].Leader)
	require.Equal(t, "a", cs[0].ID())
	require.Equal(t, "a", cs[0].Attributes.Labels["zone"])
	require.Equal(t, election.PolicyNewestVersion, cs[0].Policy)
	require.Nil(t, cs[1].Attributes)
	require.Equal(t, "etcd", cs[1].ID())
	require.Equal(t, "b-id", cs[2].ID())
	require.Equal(t, "0.9.0", cs[2].Attributes.Version)
	require.Less(t, cs[0].Token, cs[1].Token)
	require.Less(t, cs[1].Token, cs[2].Token)

	// etcd's client sees exactly the three candidate keys.
	resp, err := cli.Get(ctx, "cands/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 3)
	require.NoError(t, sess.Close())
	_ = bres
}

// ResignTo a named candidate at the back: the ones between re-queue, the
// leader resigns, the target leads with a higher token, and an observer
// sees no other leader in between.
func TestCoordinatedResignToNamed(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	log := observeLeaders(t, ctx, cli, "rt")
	mk := func(id string) *election.Election {
		return coordElection(t, cli, "rt", election.PolicyFirstCome, election.Attributes{ID: id})
	}
	la, err := mk("a").Campaign(ctx, "a")
	require.NoError(t, err)
	log.until(t, "a")
	rb := campaignAsync(ctx, mk("b"), "b")
	waitCandidates(t, cli, "rt/", 2)
	rc := campaignAsync(ctx, mk("c"), "c")
	waitCandidates(t, cli, "rt/", 3)
	rd := campaignAsync(ctx, mk("d"), "d")
	waitCandidates(t, cli, "rt/", 4)

	require.NoError(t, la.ResignTo(ctx, "d"))
	require.ErrorIs(t, la.Err(), election.ErrResigned)
	d := await(t, rd, "d to lead")
	require.NoError(t, d.err)
	require.Greater(t, d.l.Token(), la.Token())
	require.Equal(t, []string{"a", "d"}, log.until(t, "d"), "nobody led between a and d")

	cs, err := d.l.Candidates(ctx)
	require.NoError(t, err)
	require.Len(t, cs, 3, "b and c re-queued, a left")
	require.Equal(t, "d", cs[0].ID())
	require.Greater(t, cs[1].Token, d.l.Token(), "b re-queued behind d")
	require.Greater(t, cs[2].Token, d.l.Token(), "c re-queued behind d")
	require.NoError(t, d.l.Resign(ctx))
	// b and c re-queued concurrently: either may be first now.
	for range 2 {
		var r campaignResult
		select {
		case r = <-rb:
		case r = <-rc:
		case <-time.After(waitLimit):
			t.Fatal("timed out waiting for b and c")
		}
		require.NoError(t, r.err)
		require.NoError(t, r.l.Resign(ctx))
	}
}

func TestCoordinatedResignToErrors(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	la, err := coordElection(t, cli, "rte", election.PolicyPriority, election.Attributes{ID: "a"}).Campaign(ctx, "a")
	require.NoError(t, err)
	require.ErrorIs(t, la.ResignTo(ctx, election.Best), election.ErrNoCandidate)
	require.ErrorIs(t, la.ResignTo(ctx, "nobody"), election.ErrNoCandidate)

	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	require.NoError(t, err)
	defer sess.Close()
	theirs := concurrency.NewElection(sess, "rte")
	theirWin := make(chan error, 1)
	go func() { theirWin <- theirs.Campaign(ctx, "etcd") }()
	waitCandidates(t, cli, "rte/", 2)
	rc := campaignAsync(ctx, coordElection(t, cli, "rte", election.PolicyPriority, election.Attributes{ID: "c", Priority: 9}, election.WithNoPreempt()), "c")
	waitCandidates(t, cli, "rte/", 3)
	require.ErrorIs(t, la.ResignTo(ctx, "c"), election.ErrHandoverBlocked)
	require.True(t, la.Alive(), "a blocked handover keeps the leadership")
	select {
	case <-la.Yield():
		t.Fatal("a preferred candidate behind a foreign one makes the leader yield")
	default:
	}
	require.NoError(t, la.Resign(ctx))
	require.NoError(t, await(t, theirWin, "concurrency.Election"))
	require.NoError(t, theirs.Resign(ctx))
	r := await(t, rc, "c")
	require.NoError(t, r.err)
	require.NoError(t, r.l.Resign(ctx))
}

// A candidate between the leader and the target that crashed (its key on a
// lease nobody keeps alive, attributes published, nobody to re-queue it):
// the leader keeps leading until the key expires, then hands over.
func TestCoordinatedResignToWaitsOutACrashedCandidate(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	log := observeLeaders(t, ctx, cli, "crash")
	mk := func(id string) *election.Election {
		return coordElection(t, cli, "crash", election.PolicyPriority, election.Attributes{ID: id}, election.WithNoPreempt())
	}
	la, err := mk("a").Campaign(ctx, "a")
	require.NoError(t, err)
	log.until(t, "a")
	rawCandidate(t, ctx, cli, "crash", "dead", 2)
	rc := campaignAsync(ctx, mk("c"), "c")
	waitCandidates(t, cli, "crash/", 3)
	cs, err := la.Candidates(ctx)
	require.NoError(t, err)
	require.NotNil(t, cs[1].Attributes, "the crashed candidate published attributes")

	require.NoError(t, la.ResignTo(ctx, "c"))
	r := await(t, rc, "c")
	require.NoError(t, r.err)
	require.Equal(t, []string{"a", "c"}, log.until(t, "c"), "the crashed candidate never led")
	require.Greater(t, r.l.Token(), la.Token())
	require.NoError(t, r.l.Resign(ctx))
}

// Under priority a higher-priority candidate that joins gets the
// leadership through Run, once; the old leader does not take it back.
func TestCoordinatedPreemptionThroughRun(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	log := observeLeaders(t, ctx, cli, "pre")
	type lead struct {
		id    string
		token fencing.Token
	}
	leads := make(chan lead, 16)
	run := func(id string, prio int64) (stop func()) {
		e := coordElection(t, cli, "pre", election.PolicyPriority, election.Attributes{ID: id, Priority: prio})
		rctx, cancel := context.WithCancel(ctx)
		done := runLoop(rctx, e, election.RunConfig{
			Value:           id,
			ReleaseOnCancel: true,
			OnStartedLeading: func(ctx context.Context, l *election.Leadership) {
				leads <- lead{id, l.Token()}
				<-ctx.Done()
			},
		})
		return func() { cancel(); require.NoError(t, <-done) }
	}
	stopA := run("a", 1)
	first := await(t, leads, "a to lead")
	require.Equal(t, "a", first.id)
	stopB := run("b", 5)
	second := await(t, leads, "b to lead")
	require.Equal(t, "b", second.id)
	require.Greater(t, second.token, first.token)
	require.Equal(t, []string{"a", "b"}, log.until(t, "b"))
	// a campaigns again at the back and stays there.
	waitCandidates(t, cli, "pre/", 2)
	select {
	case l := <-leads:
		t.Fatalf("%s led again", l.id)
	default:
	}
	stopB()
	third := await(t, leads, "a to lead after b left")
	require.Equal(t, "a", third.id)
	require.Greater(t, third.token, second.token)
	stopA()
}

// With no-preempt the preferred candidate waits; ResignTo(Best) picks it
// over one queued before it.
func TestCoordinatedNoPreemptResignToBest(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	mk := func(id, v string) *election.Election {
		return coordElection(t, cli, "np", election.PolicyNewestVersion, election.Attributes{ID: id, Version: v}, election.WithNoPreempt())
	}
	la, err := mk("a", "1.0.0").Campaign(ctx, "a")
	require.NoError(t, err)
	rb := campaignAsync(ctx, mk("b", "1.0.0"), "b")
	waitCandidates(t, cli, "np/", 2)
	rc := campaignAsync(ctx, mk("c", "1.1.0"), "c")
	waitCandidates(t, cli, "np/", 3)
	select {
	case <-la.Yield():
		t.Fatal("yield under no-preempt")
	default:
	}
	require.True(t, la.Alive())
	require.NoError(t, la.ResignTo(ctx, election.Best))
	r := await(t, rc, "c")
	require.NoError(t, r.err)
	require.NoError(t, r.l.Resign(ctx))
	r = await(t, rb, "b")
	require.NoError(t, r.err)
	require.NoError(t, r.l.Resign(ctx))
}

// rawCandidate puts a candidate key with attributes on a lease of ttl
// seconds that nobody keeps alive: a candidate that crashed, or is about to.
func rawCandidate(t *testing.T, ctx context.Context, cli *clientv3.Client, name, id string, ttl int64) string {
	t.Helper()
	grant, err := cli.Grant(ctx, ttl)
	require.NoError(t, err)
	key := fmt.Sprintf("%s/%x", name, grant.ID)
	attrs, _ := json.Marshal(map[string]any{"id": id, "policy": "first-come"})
	_, err = cli.Txn(ctx).Then(
		clientv3.OpPut(key, id, clientv3.WithLease(grant.ID)),
		clientv3.OpPut(fmt.Sprintf("%s\x00coord/attr/%x", name, grant.ID), string(attrs), clientv3.WithLease(grant.ID)),
	).Commit()
	require.NoError(t, err)
	return key
}

// The target leaves while the leader waits for a crashed candidate before
// it: ResignTo gives up keeping the leadership and withdraws the record.
func TestCoordinatedResignToTargetGone(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	la, err := coordElection(t, cli, "gone", election.PolicyFirstCome, election.Attributes{ID: "a"}).Campaign(ctx, "a")
	require.NoError(t, err)
	rawCandidate(t, ctx, cli, "gone", "stuck", 60)
	target := rawCandidate(t, ctx, cli, "gone", "t", 60)
	hk := "gone\x00coord/handover"
	rev, err := cli.Get(ctx, hk)
	require.NoError(t, err)
	recorded := cli.Watch(ctx, hk, clientv3.WithRev(rev.Header.Revision+1))
	done := make(chan error, 1)
	go func() { done <- la.ResignTo(ctx, "t") }()
	wr := await(t, recorded, "the handover record")
	require.NotEmpty(t, wr.Events)
	_, err = cli.Delete(ctx, target)
	require.NoError(t, err)
	require.ErrorIs(t, await(t, done, "ResignTo"), election.ErrNoCandidate)
	require.True(t, la.Alive())
	resp, err := cli.Get(ctx, hk)
	require.NoError(t, err)
	require.Empty(t, resp.Kvs, "the record is withdrawn")
	require.NoError(t, la.Resign(ctx))
}
