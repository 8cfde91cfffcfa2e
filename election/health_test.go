package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/session"
)

// IsLeader follows the leadership without I/O: false before Campaign,
// true while leading, false after Resign.
func TestElectionIsLeader(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	e := newElection(t, cli, "isleader")
	other := newElection(t, cli, "isleader")
	require.False(t, e.IsLeader())
	l, err := e.Campaign(ctx, "a")
	require.NoError(t, err)
	require.True(t, e.IsLeader())
	require.False(t, other.IsLeader(), "another candidate's handle")
	require.NoError(t, l.Resign(ctx))
	require.False(t, e.IsLeader())
}

// Check fails while Run's OnStartedLeading goes on acting after its
// leadership ended (here: a session past its deadline on a fake clock) for
// longer than the tolerance, and is healthy again once it returns. A
// candidate that leads in time, or does not lead, is healthy.
func TestElectionCheckCatchesALeaderThatActsPastItsLeadership(t *testing.T) {
	t.Parallel()
	_, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	clk := newFakeClock()
	e := newElection(t, cli, "check", election.WithTTL(5*time.Second), election.WithSessionOptions(session.WithClock(clk)))
	require.NoError(t, e.Check(0), "not leading")
	leading := make(chan *election.Leadership, 1)
	ended := make(chan struct{})
	unstick := make(chan struct{})
	done := runAsync(ctx, e, election.RunConfig{
		Value: "stuck",
		OnStartedLeading: func(lctx context.Context, l *election.Leadership) {
			leading <- l
			<-lctx.Done()
			close(ended)
			<-unstick // does not return when told to: a hung leader
		},
	})
	l := await(t, leading, "leadership")
	require.True(t, e.IsLeader())
	require.NoError(t, e.Check(0), "leading within its deadline")

	clk.Advance(time.Minute) // the deadline (TTL minus margin) is long past
	await(t, ended, "the leadership to end")
	require.False(t, e.IsLeader())
	require.ErrorIs(t, l.Err(), session.ErrExpired)
	require.NoError(t, e.Check(time.Hour), "within the tolerance")
	err := e.Check(time.Second)
	require.Error(t, err, "OnStartedLeading still runs a minute past the deadline")
	t.Log(err)

	close(unstick)
	require.ErrorIs(t, await(t, done, "Run"), session.ErrExpired)
	require.NoError(t, e.Check(0), "OnStartedLeading returned")
}
