package election_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/session"
)

// etcd is the member this package's tests share, each under a prefix of
// its own; Examples use it too.
var etcd etcdtest.Shared

func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m, &etcd)) }

const waitLimit = 10 * time.Second

func testCtx(t *testing.T) context.Context { return etcdtest.Ctx(t, 30*time.Second) }

func newElection(t *testing.T, cli *clientv3.Client, name string, opts ...election.Option) *election.Election {
	t.Helper()
	e, err := election.New(cli, name, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

type campaignResult struct {
	l   *election.Leadership
	err error
	at  time.Time
}

// campaignAsync campaigns in a goroutine and reports on the returned channel.
func campaignAsync(ctx context.Context, e *election.Election, value string) <-chan campaignResult {
	ch := make(chan campaignResult, 1)
	go func() {
		l, err := e.Campaign(ctx, value)
		ch <- campaignResult{l, err, time.Now()}
	}()
	return ch
}

func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return etcdtest.Recv(t, ch, what, waitLimit)
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// waitCandidates waits until n keys are under prefix.
func waitCandidates(t *testing.T, cli *clientv3.Client, prefix string, n int) []*clientv3.GetResponse {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		require.NoError(t, err)
		if len(resp.Kvs) == n {
			return []*clientv3.GetResponse{resp}
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %d candidates under %q, have %d", n, prefix, len(resp.Kvs))
		}
		// Poll etcd, a condition with no event to await from outside the campaign.
		time.Sleep(5 * time.Millisecond)
	}
}

func TestElectionLeaderAndNoLeader(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	e := newElection(t, cli, "svc")
	_, err := e.Leader(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader)

	l, err := e.Campaign(ctx, "node-a")
	require.NoError(t, err)
	require.True(t, l.Alive())
	require.Equal(t, "svc", l.Name())
	require.Equal(t, fmt.Sprintf("svc/%x", l.Lease()), l.Key())

	got, err := e.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, election.Leader{Value: "node-a", Token: l.Token(), Key: l.Key(), Lease: l.Lease()}, got)

	require.NoError(t, l.Resign(ctx))
	require.True(t, closed(l.Context().Done()))
	require.False(t, closed(l.Lost()), "Lost closes on a loss only, as on every held key; a Resign is not one")
	require.ErrorIs(t, l.Err(), election.ErrResigned)
	require.NoError(t, l.Resign(ctx), "second Resign is a no-op")
	_, err = e.Leader(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader)
	ttl, err := cli.TimeToLive(ctx, l.Lease())
	require.NoError(t, err)
	require.EqualValues(t, -1, ttl.TTL, "Resign revokes the election's own session")
}

func TestElectionNewRejectsBadInput(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	_, err := election.New(cli, "")
	require.ErrorIs(t, err, session.ErrInvalidName)
	_, err = election.New(cli, "x", election.WithTTL(100*time.Millisecond))
	require.ErrorIs(t, err, session.ErrBadTTL)
	_, err = election.New(nil, "x")
	require.Error(t, err)
}

func TestElectionPrefix(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	e := newElection(t, cli, "svc", election.WithPrefix("team/"))
	l, err := e.Campaign(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("team/svc/%x", l.Lease()), l.Key())
	other := newElection(t, cli, "svc")
	_, err = other.Leader(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader, "another prefix is another election")
}

// coordkit and etcd's concurrency.Election (what `etcdctl elect` uses)
// campaign against each other on one name, in create-revision order.
func TestElectionInteropWithConcurrency(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	ours := newElection(t, cli, "interop")
	l1, err := ours.Campaign(ctx, "coordkit-1")
	require.NoError(t, err)

	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	require.NoError(t, err)
	defer sess.Close()
	theirs := concurrency.NewElection(sess, "interop")
	theirWin := make(chan error, 1)
	go func() { theirWin <- theirs.Campaign(ctx, "etcd-1") }()
	waitCandidates(t, cli, "interop/", 2)
	select {
	case err := <-theirWin:
		t.Fatalf("concurrency.Election won while coordkit leads: %v", err)
	default:
	}
	// And a coordkit candidate queues behind both.
	next := campaignAsync(ctx, ours, "coordkit-2")
	waitCandidates(t, cli, "interop/", 3)

	require.NoError(t, l1.Resign(ctx))
	require.NoError(t, await(t, theirWin, "concurrency.Election to win"))
	got, err := ours.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, "etcd-1", got.Value)
	require.Equal(t, fencing.Token(theirs.Rev()), got.Token)
	require.Greater(t, got.Token, l1.Token())
	select {
	case r := <-next:
		t.Fatalf("coordkit candidate won while concurrency.Election leads: %v", r.err)
	default:
	}

	require.NoError(t, theirs.Resign(ctx))
	r := await(t, next, "coordkit candidate to win")
	require.NoError(t, r.err)
	require.Greater(t, r.l.Token(), got.Token)
	resp, err := theirs.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, "coordkit-2", string(resp.Kvs[0].Value), "concurrency.Election sees our leader")
	require.NoError(t, r.l.Resign(ctx))
}

func TestElectionTokensStrictlyIncrease(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	type waiter struct {
		e   *election.Election
		res <-chan campaignResult
	}
	var queue []waiter
	for i := 0; i < 3; i++ {
		e := newElection(t, cli, "tok")
		queue = append(queue, waiter{e, campaignAsync(ctx, e, fmt.Sprint("c", i))})
		waitCandidates(t, cli, "tok/", i+1)
	}
	var last fencing.Token
	for round := 0; round < 6; round++ {
		// The oldest candidate wins, and only it.
		head := queue[0]
		r := await(t, head.res, "the oldest candidate to win")
		require.NoError(t, r.err)
		for _, w := range queue[1:] {
			select {
			case r := <-w.res:
				t.Fatalf("two leaders at once: %v", r.err)
			default:
			}
		}
		kv, err := cli.Get(ctx, r.l.Key())
		require.NoError(t, err)
		require.Equal(t, fencing.Token(kv.Kvs[0].CreateRevision), r.l.Token(), "token = create revision")
		require.Greater(t, r.l.Token(), last)
		last = r.l.Token()
		require.NoError(t, r.l.Resign(ctx))
		// The one that resigned queues again, at the back.
		queue = append(queue[1:], waiter{head.e, campaignAsync(ctx, head.e, fmt.Sprint("r", round))})
		waitCandidates(t, cli, "tok/", 3)
	}
	for _, w := range queue {
		r := await(t, w.res, "the remaining candidates")
		require.NoError(t, r.err)
		require.Greater(t, r.l.Token(), last)
		last = r.l.Token()
		require.NoError(t, r.l.Resign(ctx))
	}
}

// A candidate whose lease goes while it waits must not win when the leader
// steps down. etcd's concurrency.Election does win — a phantom leader with
// no key — and coordkit returns ErrSessionExpired.
func TestElectionNoPhantomWin(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)

	t.Run("concurrency.Election wins without a key", func(t *testing.T) {
		leaderSess, err := concurrency.NewSession(cli)
		require.NoError(t, err)
		defer leaderSess.Close()
		leader := concurrency.NewElection(leaderSess, "phantom-etcd")
		require.NoError(t, leader.Campaign(ctx, "a"))

		waiterSess, err := concurrency.NewSession(cli)
		require.NoError(t, err)
		defer waiterSess.Orphan()
		waiter := concurrency.NewElection(waiterSess, "phantom-etcd")
		won := make(chan error, 1)
		go func() { won <- waiter.Campaign(ctx, "b") }()
		waitCandidates(t, cli, "phantom-etcd/", 2)
		_, err = cli.Revoke(ctx, waiterSess.Lease()) // the waiter's lease expires
		require.NoError(t, err)
		waitCandidates(t, cli, "phantom-etcd/", 1)
		require.NoError(t, leader.Resign(ctx))
		require.NoError(t, await(t, won, "concurrency.Election campaign"), "etcd reports a win")
		resp, err := cli.Get(ctx, waiter.Key())
		require.NoError(t, err)
		require.Empty(t, resp.Kvs, "…for a candidate whose key is gone")
	})

	t.Run("coordkit: lease revoked while waiting", func(t *testing.T) {
		e := newElection(t, cli, "phantom")
		l, err := e.Campaign(ctx, "a")
		require.NoError(t, err)
		w := newElection(t, cli, "phantom")
		res := campaignAsync(ctx, w, "b")
		resp := waitCandidates(t, cli, "phantom/", 2)[0]
		_, err = cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[1].Lease))
		require.NoError(t, err)
		r := await(t, res, "campaign to fail")
		require.ErrorIs(t, r.err, session.ErrGoneWhileWaiting)
		require.Nil(t, r.l)
		require.True(t, l.Alive(), "the leader is untouched")
		require.NoError(t, l.Resign(ctx))
	})

	t.Run("coordkit: local deadline passes while waiting", func(t *testing.T) {
		e := newElection(t, cli, "phantom-deadline")
		l, err := e.Campaign(ctx, "a")
		require.NoError(t, err)
		w := newElection(t, cli, "phantom-deadline", election.WithTTL(2*time.Second),
			election.WithSessionOptions(session.WithKeepAliveInterval(time.Hour)))
		start := time.Now()
		r := await(t, campaignAsync(ctx, w, "b"), "campaign to fail")
		require.ErrorIs(t, r.err, session.ErrGoneWhileWaiting)
		// The local deadline ended it (not the server's expiry, which
		// would delete the key instead). That the deadline comes before
		// the server's is session's (TestDeadlineNeverOutlivesServerLease);
		// how soon after it the campaign returns depends on the load.
		require.ErrorIs(t, r.err, session.ErrExpired)
		t.Logf("reported %s after the campaign started (TTL 2s)", time.Since(start).Round(time.Millisecond))
		resp, err := cli.Get(ctx, "phantom-deadline/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		require.NoError(t, err)
		require.EqualValues(t, 1, resp.Count, "the failed candidate removed its key")
		require.NoError(t, l.Resign(ctx))
	})

	t.Run("coordkit: key deleted while waiting", func(t *testing.T) {
		e := newElection(t, cli, "phantom-del")
		l, err := e.Campaign(ctx, "a")
		require.NoError(t, err)
		w := newElection(t, cli, "phantom-del")
		res := campaignAsync(ctx, w, "b")
		resp := waitCandidates(t, cli, "phantom-del/", 2)[0]
		_, err = cli.Delete(ctx, string(resp.Kvs[1].Key))
		require.NoError(t, err)
		r := await(t, res, "campaign to fail")
		require.ErrorIs(t, r.err, session.ErrGoneWhileWaiting)
		require.NoError(t, l.Resign(ctx))
	})
}

func TestElectionCampaignCancelRemovesCandidate(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	e := newElection(t, cli, "cancel")
	l, err := e.Campaign(ctx, "a")
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	res := campaignAsync(cctx, newElection(t, cli, "cancel"), "b")
	waitCandidates(t, cli, "cancel/", 2)
	cancel()
	r := await(t, res, "cancelled campaign")
	require.ErrorIs(t, r.err, context.Canceled)
	waitCandidates(t, cli, "cancel/", 1)
	require.NoError(t, l.Resign(ctx))
}

func TestElectionCloseEndsCampaignsAndLeaderships(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	e, err := election.New(cli, "close")
	require.NoError(t, err)
	l, err := e.Campaign(ctx, "a")
	require.NoError(t, err)
	w, err := election.New(cli, "close")
	require.NoError(t, err)
	res := campaignAsync(ctx, w, "b")
	waitCandidates(t, cli, "close/", 2)
	require.NoError(t, w.Close())
	require.ErrorIs(t, await(t, res, "closed campaign").err, session.ErrClosed)
	require.NoError(t, e.Close())
	require.True(t, closed(l.Context().Done()))
	require.ErrorIs(t, l.Err(), election.ErrResigned)
	waitCandidates(t, cli, "close/", 0)
	_, err = e.Campaign(ctx, "again")
	require.ErrorIs(t, err, session.ErrClosed)
}

func TestElectionResignIsFenced(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	s, err := session.New(ctx, cli)
	require.NoError(t, err)
	defer s.Close()
	// One session, so both leaderships use the same key name.
	e := newElection(t, cli, "fenced", election.WithSession(s))
	old, err := e.Campaign(ctx, "a")
	require.NoError(t, err)
	_, err = cli.Delete(ctx, old.Key()) // behind its back
	require.NoError(t, err)
	await(t, old.Lost(), "loss of the deleted leadership")
	require.ErrorIs(t, old.Err(), session.ErrLost)

	cur, err := e.Campaign(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, old.Key(), cur.Key())
	require.Greater(t, cur.Token(), old.Token())

	require.ErrorIs(t, old.Proclaim(ctx, "stale"), election.ErrNotLeader)
	require.ErrorIs(t, old.Resign(ctx), election.ErrNotLeader)
	got, err := e.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, cur.Token(), got.Token, "a stale Resign must not delete the newer key")
	require.Equal(t, "b", got.Value)
	require.True(t, cur.Alive())
	require.NoError(t, cur.Resign(ctx))
	require.True(t, s.Alive(), "Resign leaves a WithSession session open")
}

func TestElectionProclaim(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	e := newElection(t, cli, "proclaim")
	l, err := e.Campaign(ctx, "v1")
	require.NoError(t, err)
	require.NoError(t, l.Proclaim(ctx, "v2"))
	require.Equal(t, "v2", l.Value())
	got, err := e.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, "v2", got.Value)
	require.Equal(t, l.Token(), got.Token, "Proclaim keeps the token")
	require.True(t, l.Alive(), "our own Proclaim is not a loss")
	require.NoError(t, l.Resign(ctx))
	require.ErrorIs(t, l.Proclaim(ctx, "v3"), election.ErrNotLeader)
}

func TestElectionLossSignalled(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)

	t.Run("lease revoked", func(t *testing.T) {
		e := newElection(t, cli, "loss-revoke")
		l, err := e.Campaign(ctx, "a")
		require.NoError(t, err)
		_, err = cli.Revoke(ctx, l.Lease())
		require.NoError(t, err)
		await(t, l.Lost(), "loss")
		require.ErrorIs(t, l.Err(), session.ErrLost)
		require.ErrorIs(t, l.Err(), session.ErrRevoked, "a revoke is the reason, not only the key's delete")
		require.ErrorIs(t, context.Cause(l.Context()), session.ErrRevoked)
		require.False(t, l.Alive())
		await(t, l.Session().Done(), "the session's end")
		require.ErrorIs(t, l.Session().Err(), session.ErrRevoked, "the session is not taken for closed")
	})

	t.Run("local deadline", func(t *testing.T) {
		e := newElection(t, cli, "loss-deadline", election.WithTTL(2*time.Second),
			election.WithSessionOptions(session.WithKeepAliveInterval(time.Hour)))
		l, err := e.Campaign(ctx, "a")
		require.NoError(t, err)
		// The lease was granted before Campaign returned, so it expires on
		// the server less than its TTL after this instant; the loss comes
		// before that (measured from here, not from before the campaign,
		// which a loaded machine may make slow).
		won := time.Now()
		await(t, l.Lost(), "loss")
		require.Less(t, time.Since(won), 2*time.Second)
		require.ErrorIs(t, l.Err(), session.ErrLost)
		require.ErrorIs(t, l.Err(), session.ErrExpired)
		got, err := e.Leader(ctx)
		require.NoError(t, err)
		require.Equal(t, l.Token(), got.Token, "loss is declared while the server still has our key")
	})

	t.Run("key replaced", func(t *testing.T) {
		e := newElection(t, cli, "loss-replace")
		l, err := e.Campaign(ctx, "a")
		require.NoError(t, err)
		_, err = cli.Delete(ctx, l.Key())
		require.NoError(t, err)
		_, err = cli.Put(ctx, l.Key(), "intruder")
		require.NoError(t, err)
		await(t, l.Lost(), "loss")
		require.ErrorIs(t, l.Err(), session.ErrLost)
	})
}

func TestElectionObserve(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	e := newElection(t, cli, "observe")
	octx, cancel := context.WithCancel(ctx)
	obs := e.Observe(octx)
	next := func() *election.Leader {
		t.Helper()
		o := await(t, obs, "observation")
		require.NoError(t, o.Err)
		return o.Leader
	}
	require.Nil(t, next(), "no leader at first")

	a, err := e.Campaign(ctx, "a")
	require.NoError(t, err)
	got := next()
	require.NotNil(t, got)
	require.Equal(t, "a", got.Value)
	require.Equal(t, a.Token(), got.Token)

	res := campaignAsync(ctx, newElection(t, cli, "observe"), "b")
	waitCandidates(t, cli, "observe/", 2)
	require.NoError(t, a.Proclaim(ctx, "a2"))
	got = next()
	require.Equal(t, "a2", got.Value, "value changes are reported")

	require.NoError(t, a.Resign(ctx))
	got = next()
	require.Equal(t, "b", got.Value, "handover goes straight to the next leader")
	b := await(t, res, "b wins")
	require.NoError(t, b.err)
	require.Equal(t, b.l.Token(), got.Token)

	require.NoError(t, b.l.Resign(ctx))
	require.Nil(t, next(), "no leader once the last one resigned")

	c, err := e.Campaign(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, "c", next().Value)
	_, err = cli.Revoke(ctx, c.Lease())
	require.NoError(t, err)
	require.Nil(t, next(), "no leader after the lease went")

	cancel()
	for range obs {
	}
}

func TestElectionObserveReportsError(t *testing.T) {
	t.Parallel()
	// A server of its own and a plain client: closing a namespaced client
	// while it watches races in etcd's namespace package.
	cli := etcdtest.Client(t, etcdtest.Start(t))
	e := newElection(t, cli, "obs-err")
	ctx := testCtx(t)
	obs := e.Observe(ctx)
	require.Nil(t, await(t, obs, "first").Leader)
	require.NoError(t, cli.Close())
	var last election.Observation
	for o := range obs {
		last = o
	}
	require.Error(t, last.Err, "a failed observation is reported before the channel closes")
	require.False(t, errors.Is(last.Err, context.Canceled) && ctx.Err() != nil)
}

// Each resignation hands the leadership to the candidate waiting behind it,
// with a larger token, while the resigned one is not leading. How fast the
// handover is (why it is fast: lock/mutex.go, attempt.wait)
// depends on the machine's load, so `coordctl bench elect` measures it; this
// test asserts the order and logs the latencies.
func TestElectionHandoverGoesToTheWaiter(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	es := [2]*election.Election{newElection(t, cli, "fast"), newElection(t, cli, "fast")}
	l, err := es[0].Campaign(ctx, "a")
	require.NoError(t, err)
	var samples []time.Duration
	for i := 0; i < 7; i++ {
		res := campaignAsync(ctx, es[(i+1)%2], "next")
		waitCandidates(t, cli, "fast/", 2)
		select {
		case r := <-res:
			t.Fatalf("round %d: the waiter won before the leader resigned: %+v", i, r)
		default:
		}
		start := time.Now()
		require.NoError(t, l.Resign(ctx))
		r := await(t, res, "handover")
		require.NoError(t, r.err)
		require.Greater(t, r.l.Token(), l.Token(), "round %d: the next leader's token is larger", i)
		require.False(t, r.at.Before(start), "round %d: won only after the resignation", i)
		samples = append(samples, r.at.Sub(start))
		l = r.l
	}
	require.NoError(t, l.Resign(ctx))
	slices.Sort(samples)
	t.Logf("handover latencies (for information; bench elect measures them): %v", samples)
}

// A Resign whose delete failed can be retried: on a shared session nothing
// else would ever remove the key.
func TestElectionResignRetriesAfterFailure(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	s, err := session.New(ctx, cli)
	require.NoError(t, err)
	defer s.Close()
	e := newElection(t, cli, "retry", election.WithSession(s))
	l, err := e.Campaign(ctx, "a")
	require.NoError(t, err)

	dead, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, l.Resign(dead), context.Canceled)
	require.True(t, closed(l.Context().Done()), "the holder is told to stop even when the delete failed")
	_, err = e.Leader(ctx)
	require.NoError(t, err, "the key is still there after the failed delete")

	require.NoError(t, l.Resign(ctx))
	_, err = e.Leader(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader, "the retry deleted the key")
	require.NoError(t, l.Resign(ctx), "a Resign after success is a no-op")
}
