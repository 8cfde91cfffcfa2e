package election_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// runLoop runs Run again after each leadership, as a program that wants
// to campaign again writes it (Run's doc), until ctx ends or Run fails.
func runLoop(ctx context.Context, e *election.Election, cfg election.RunConfig) <-chan error {
	done := make(chan error, 1)
	go func() {
		for {
			err := election.Run(ctx, e, cfg)
			if ctx.Err() != nil {
				done <- nil
				return
			}
			if !errors.Is(err, session.ErrLost) && !errors.Is(err, election.ErrResigned) {
				done <- err
				return
			}
		}
	}()
	return done
}

// Run returns after its leadership ends, like client-go's LeaderElector.Run,
// with an error wrapping the cause; the caller's loop campaigns again, on a
// new session. OnStoppedLeading runs on each return, after OnStartedLeading
// returned; OnNewLeader sees real leaders only.
func TestElectionRunReturnsAfterLossAndTheCallerLoops(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	e := newElection(t, cli, "run")
	rec := newRecorder()
	leases := make(chan *election.Leadership, 10)
	observed := make(chan fencing.Token, 100)
	cfg := election.RunConfig{
		Value: "me",
		OnStartedLeading: func(ctx context.Context, l *election.Leadership) {
			rec.add("started")
			leases <- l
			<-ctx.Done()
			rec.add("started-returns")
		},
		OnStoppedLeading: func() { rec.add("stopped") },
		OnNewLeader: func(value string, token fencing.Token) {
			observed <- token
			rec.add("leader:" + value)
		},
		OnNoLeader: func() { rec.add("leader:none") },
		Backoff:    session.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond},
	}
	rctx, cancel := context.WithCancel(ctx)
	done := runAsync(rctx, e, cfg)
	first := await(t, leases, "first leadership")
	// The lease goes behind our back: Run returns the loss.
	_, err := cli.Revoke(ctx, first.Lease())
	require.NoError(t, err)
	err = await(t, done, "Run to return after the loss")
	require.ErrorIs(t, err, session.ErrLost)
	require.ErrorIs(t, err, session.ErrRevoked)
	require.Equal(t, []string{"started", "started-returns", "stopped"}, filter(rec.snapshot(), "started", "started-returns", "stopped"))

	// The caller's loop: Run again leads on a new session.
	done = runAsync(rctx, e, cfg)
	second := await(t, leases, "second leadership")
	require.Greater(t, second.Token(), first.Token())
	require.NotEqual(t, first.Lease(), second.Lease(), "a new session per campaign")
	for deadline := time.After(waitLimit); ; {
		select {
		case tok := <-observed:
			if tok == second.Token() {
				goto seen
			}
		case <-deadline:
			t.Fatal("OnNewLeader never reported the second term")
		}
	}
seen:
	cancel()
	require.NoError(t, await(t, done, "Run to return"))
	require.Equal(t, []string{"started", "started-returns", "stopped", "started", "started-returns", "stopped"},
		filter(rec.snapshot(), "started", "started-returns", "stopped"))
	require.Contains(t, rec.snapshot(), "leader:me")
	require.Equal(t, "stopped", rec.snapshot()[len(rec.snapshot())-1], "nothing is called after OnStoppedLeading")

	// Without ReleaseOnCancel the key is left to expire with the lease.
	got, err := e.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, second.Token(), got.Token)
}

// filter keeps the events named in keep, in order.
func filter(events []string, keep ...string) []string {
	var out []string
	for _, ev := range events {
		if slices.Contains(keep, ev) {
			out = append(out, ev)
		}
	}
	return out
}

// A candidate that never leads is told OnStoppedLeading too, when Run
// returns; "no leader" goes to OnNoLeader, never to OnNewLeader.
func TestElectionRunCallbacksForACandidateThatNeverLeads(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	rec := newRecorder()
	rctx, cancel := context.WithCancel(ctx)
	// Every campaign of this candidate fails (no session can have a margin
	// above its TTL), so it never leads and, alone, sees no leader.
	e := newElection(t, cli, "never", election.WithTTL(time.Second), election.WithSessionOptions(session.WithMargin(time.Hour)))
	done := runAsync(rctx, e, election.RunConfig{
		Value:            "waiter",
		Backoff:          session.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond},
		OnStartedLeading: func(context.Context, *election.Leadership) { rec.add("started") },
		OnStoppedLeading: func() { rec.add("stopped") },
		OnNewLeader:      func(value string, _ fencing.Token) { rec.add("leader:" + value) },
		OnNoLeader:       func() { rec.add("no-leader") },
	})
	rec.waitFor(t, "no-leader")
	holder, err := newElection(t, cli, "never").Campaign(ctx, "holder")
	require.NoError(t, err)
	rec.waitFor(t, "leader:holder")
	cancel()
	require.NoError(t, await(t, done, "Run"))
	require.Equal(t, []string{"no-leader", "leader:holder", "stopped"}, rec.snapshot())
	require.NoError(t, holder.Resign(ctx))
}

// The cause of OnStartedLeading's ctx is the real reason the leadership
// ended, every time: it used to race with ErrResigned after a loss.
func TestElectionRunCauseIsTheRealReason(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	errShutdown := errors.New("shutting down")
	cases := []struct {
		name string
		opts []election.Option
		// end ends the leadership l (with Run's cancel and resign channel at hand).
		end    func(t *testing.T, l *election.Leadership, cancel context.CancelCauseFunc, resign chan<- struct{}, clk *fakeClock)
		want   []error
		notErr error
		runErr bool // Run returns an error wrapping want (else nil)
	}{
		{
			name: "lease revoked",
			end: func(t *testing.T, l *election.Leadership, _ context.CancelCauseFunc, _ chan<- struct{}, _ *fakeClock) {
				_, err := cli.Revoke(ctx, l.Lease())
				require.NoError(t, err)
			},
			want: []error{session.ErrLost, session.ErrRevoked}, runErr: true,
		},
		{
			name: "key deleted",
			end: func(t *testing.T, l *election.Leadership, _ context.CancelCauseFunc, _ chan<- struct{}, _ *fakeClock) {
				_, err := cli.Delete(ctx, l.Key())
				require.NoError(t, err)
			},
			want: []error{session.ErrLost, session.ErrKeyGone}, notErr: session.ErrRevoked, runErr: true,
		},
		{
			name: "local deadline",
			end: func(t *testing.T, l *election.Leadership, _ context.CancelCauseFunc, _ chan<- struct{}, clk *fakeClock) {
				clk.Advance(time.Minute) // past the deadline, before any keepalive
			},
			want: []error{session.ErrLost, session.ErrExpired}, runErr: true,
		},
		{
			name: "resign request",
			end: func(t *testing.T, _ *election.Leadership, _ context.CancelCauseFunc, resign chan<- struct{}, _ *fakeClock) {
				resign <- struct{}{}
			},
			want: []error{election.ErrResigned}, notErr: session.ErrLost, runErr: true,
		},
		{
			name: "ctx ended",
			end: func(t *testing.T, _ *election.Leadership, cancel context.CancelCauseFunc, _ chan<- struct{}, _ *fakeClock) {
				cancel(errShutdown)
			},
			want: []error{errShutdown}, notErr: election.ErrResigned,
		},
	}
	const rounds = 5 // the race this guards against was lost in most rounds
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for i := range rounds {
				clk := newFakeClock()
				e := newElection(t, cli, fmt.Sprintf("cause-%s-%d", strings.ReplaceAll(tc.name, " ", "-"), i),
					election.WithTTL(5*time.Second), election.WithSessionOptions(session.WithClock(clk)))
				leading := make(chan *election.Leadership, 1)
				causes := make(chan error, 1)
				resign := make(chan struct{})
				rctx, cancel := context.WithCancelCause(ctx)
				done := runAsync(rctx, e, election.RunConfig{
					Value:  "me",
					Resign: resign,
					OnStartedLeading: func(lctx context.Context, l *election.Leadership) {
						leading <- l
						<-lctx.Done()
						causes <- context.Cause(lctx)
					},
				})
				l := await(t, leading, "leadership")
				tc.end(t, l, cancel, resign, clk)
				cause := await(t, causes, "OnStartedLeading's ctx to end")
				err := await(t, done, "Run to return")
				cancel(nil)
				for _, want := range tc.want {
					require.ErrorIs(t, cause, want, "round %d", i)
					if tc.runErr {
						require.ErrorIs(t, err, want, "Run's error, round %d", i)
					}
				}
				if !tc.runErr {
					require.NoError(t, err)
				}
				if tc.notErr != nil {
					require.NotErrorIs(t, cause, tc.notErr, "round %d", i)
				}
				if l.Err() != nil && tc.runErr {
					require.Equal(t, l.Err().Error(), cause.Error(), "the cause is Leadership.Err")
				}
			}
		})
	}
}

// fakeClock is a session.Clock that moves only when the test advances it:
// a session on it keeps its first deadline until Advance passes it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c   chan time.Time
	at  time.Time
	clk *fakeClock
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) session.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: make(chan time.Time, 1), at: c.now.Add(d), clk: c}
	if d <= 0 {
		t.c <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.c <- c.now
	}
	c.timers = kept
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.clk.mu.Lock()
	defer t.clk.mu.Unlock()
	for i, o := range t.clk.timers {
		if o == t {
			t.clk.timers = slices.Delete(t.clk.timers, i, i+1)
			return true
		}
	}
	return false
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
		n.done = runLoop(rctx, newElection(t, cli, "resign"), election.RunConfig{
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
