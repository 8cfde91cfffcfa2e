package election_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

func TestElectionBackoffFullJitter(t *testing.T) {
	t.Parallel()
	b := session.Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	cases := []struct {
		n    int
		want time.Duration
	}{
		{0, 100 * time.Millisecond},
		{1, 200 * time.Millisecond},
		{3, 800 * time.Millisecond},
		{4, time.Second},
		{60, time.Second},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, b.Cap(tc.n), "cap of retry %d", tc.n)
	}
	var zero session.Backoff
	require.Equal(t, 200*time.Millisecond, zero.Cap(0), "zero value has defaults")
	require.Equal(t, 15*time.Second, zero.Cap(100))

	// Exponential draws before retry n from [0, Cap(n)], and uses the
	// whole range: some draws land in each half of it.
	low, high := map[int]bool{}, map[int]bool{}
	for range 200 {
		bo := b.Exponential()
		for n := range 6 {
			d := bo.NextBackOff()
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, b.Cap(n), "draw before retry %d", n)
			if d < b.Cap(n)/2 {
				low[n] = true
			} else {
				high[n] = true
			}
		}
	}
	for n := range 6 {
		require.True(t, low[n] && high[n], "full jitter before retry %d", n)
	}
	bo := b.Exponential()
	for range 10 {
		bo.NextBackOff()
	}
	bo.Reset()
	require.LessOrEqual(t, bo.NextBackOff(), b.Cap(0), "Reset starts over")
}

// recorder logs Run's callbacks in order.
type recorder struct {
	mu     sync.Mutex
	events []string
	ch     chan string
}

func newRecorder() *recorder { return &recorder{ch: make(chan string, 100)} }

func (r *recorder) add(ev string) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	r.ch <- ev
}

func (r *recorder) waitFor(t *testing.T, want string) {
	t.Helper()
	for {
		select {
		case ev := <-r.ch:
			if ev == want {
				return
			}
		case <-time.After(waitLimit):
			t.Fatalf("timed out waiting for %q; have %v", want, r.snapshot())
		}
	}
}

func (r *recorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func runAsync(ctx context.Context, e *election.Election, cfg election.RunConfig) <-chan error {
	done := make(chan error, 1)
	go func() { done <- election.Run(ctx, e, cfg) }()
	return done
}

func TestElectionRunLeadsLosesAndCampaignsAgain(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	e := newElection(t, cli, "run")
	rec := newRecorder()
	leases := make(chan *election.Leadership, 10)
	var leaders []fencing.Token
	observed := make(chan fencing.Token, 100)
	var mu sync.Mutex
	rctx, cancel := context.WithCancel(ctx)
	done := runAsync(rctx, e, election.RunConfig{
		Value: "me",
		OnStartedLeading: func(ctx context.Context, l *election.Leadership) {
			rec.add("started")
			leases <- l
			<-ctx.Done()
			rec.add("started-returns")
		},
		OnStoppedLeading: func() { rec.add("stopped") },
		OnNewLeader: func(value string, token fencing.Token) {
			mu.Lock()
			leaders = append(leaders, token)
			mu.Unlock()
			observed <- token
			if value == "" {
				rec.add("leader:none")
			} else {
				rec.add("leader:" + value)
			}
		},
		Backoff: session.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond},
	})
	first := await(t, leases, "first leadership")
	// The lease goes behind our back: loss, then a new campaign on a new session.
	_, err := cli.Revoke(ctx, first.Lease())
	require.NoError(t, err)
	rec.waitFor(t, "stopped")
	second := await(t, leases, "second leadership")
	require.Greater(t, second.Token(), first.Token())
	require.NotEqual(t, first.Lease(), second.Lease(), "a new session per campaign")
	deadline := time.After(waitLimit)
	for seen := false; !seen; {
		select {
		case tok := <-observed:
			seen = tok == second.Token()
		case <-deadline:
			t.Fatal("OnNewLeader never reported the second term")
		}
	}
	cancel()
	require.NoError(t, await(t, done, "Run to return"))

	var order []string
	for _, ev := range rec.snapshot() {
		if ev == "started" || ev == "started-returns" || ev == "stopped" {
			order = append(order, ev)
		}
	}
	require.Equal(t, []string{"started", "started-returns", "stopped", "started", "started-returns", "stopped"}, order)
	require.Contains(t, rec.snapshot(), "leader:me")
	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, leaders, second.Token(), "OnNewLeader saw the second term")

	// Without ReleaseOnCancel the key is left to expire with the lease.
	got, err := e.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, second.Token(), got.Token)
}

func TestElectionRunReleaseOnCancelAfterCallbackReturns(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	e := newElection(t, cli, "release")
	var held []bool
	var token fencing.Token
	rctx, cancel := context.WithCancel(ctx)
	started := make(chan struct{})
	done := runAsync(rctx, e, election.RunConfig{
		Value:           "me",
		ReleaseOnCancel: true,
		OnStartedLeading: func(lctx context.Context, l *election.Leadership) {
			token = l.Token()
			close(started)
			<-lctx.Done()
			// Still the leader in etcd while the callback winds down.
			got, err := e.Leader(ctx)
			held = append(held, err == nil && got.Token == l.Token())
		},
		OnStoppedLeading: func() {
			_, err := e.Leader(ctx)
			held = append(held, err == nil)
		},
	})
	await(t, started, "leadership")
	cancel()
	require.NoError(t, await(t, done, "Run to return"))
	require.Equal(t, []bool{true, false}, held, "resigned after OnStartedLeading returned, before OnStoppedLeading")
	_, err := e.Leader(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader)
	require.NotZero(t, token)
}

func TestElectionRunResignChannel(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	type node struct {
		resign chan struct{}
		terms  chan fencing.Token
		done   <-chan error
	}
	rctx, cancel := context.WithCancel(ctx)
	start := func(name string) *node {
		n := &node{resign: make(chan struct{}), terms: make(chan fencing.Token, 10)}
		n.done = runAsync(rctx, newElection(t, cli, "resign"), election.RunConfig{
			Value:  name,
			Resign: n.resign,
			OnStartedLeading: func(ctx context.Context, l *election.Leadership) {
				n.terms <- l.Token()
				<-ctx.Done()
			},
		})
		return n
	}
	a := start("a")
	ta := await(t, a.terms, "a leads")
	b := start("b")
	waitCandidates(t, cli, "resign/", 2)
	a.resign <- struct{}{}
	tb := await(t, b.terms, "b leads after a resigned")
	require.Greater(t, tb, ta)
	waitCandidates(t, cli, "resign/", 2) // a queued again, behind b
	b.resign <- struct{}{}
	ta2 := await(t, a.terms, "a leads again")
	require.Greater(t, ta2, tb)
	cancel()
	require.NoError(t, await(t, a.done, "a's Run"))
	require.NoError(t, await(t, b.done, "b's Run"))
}

func TestElectionRunBacksOffOnErrorsAndStops(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	// Every campaign fails: no session can have a margin above its TTL.
	e := newElection(t, cli, "backoff", election.WithTTL(time.Second),
		election.WithSessionOptions(session.WithMargin(time.Hour)))
	var waits []time.Duration
	errs := make(chan error, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runAsync(ctx, e, election.RunConfig{
		Backoff: session.Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond},
		OnCampaignError: func(err error, retryIn time.Duration) {
			waits = append(waits, retryIn)
			errs <- err
		},
	})
	for i := 0; i < 5; i++ {
		require.Error(t, await(t, errs, "a failed campaign"))
	}
	cancel()
	require.NoError(t, await(t, done, "Run to stop"))
	for i, w := range waits {
		require.Less(t, w, session.Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond}.Cap(i)+1)
	}

	// A closed Election ends Run with ErrClosed.
	e2, err := election.New(cli, "closed")
	require.NoError(t, err)
	require.NoError(t, e2.Close())
	require.ErrorIs(t, election.Run(context.Background(), e2, election.RunConfig{}), session.ErrClosed)
}
