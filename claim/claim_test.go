package claim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/session"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, etcdtest.IgnoreEtcdGoroutines()...) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestClaimWinLoseReclaim(t *testing.T) {
	_, cli := etcdtest.StartWithClient(t)
	ctx := testCtx(t)

	won, err := Claim(ctx, cli, "alice", "node-1")
	require.NoError(t, err)
	require.True(t, won.Won)
	require.True(t, won.Yours)
	require.Equal(t, "node-1", won.Owner)
	require.Equal(t, "coordkit/claims/alice", won.Key)
	require.Zero(t, won.Lease)

	got, err := cli.Get(ctx, "coordkit/claims/alice")
	require.NoError(t, err)
	require.Len(t, got.Kvs, 1)
	require.Equal(t, "node-1", string(got.Kvs[0].Value))
	require.Equal(t, won.Revision, fencing.Token(got.Kvs[0].CreateRevision), "Revision is the key's create revision")

	lost, err := Claim(ctx, cli, "alice", "node-2")
	require.NoError(t, err, "losing is not an error")
	require.False(t, lost.Won)
	require.False(t, lost.Yours)
	require.Equal(t, "node-1", lost.Owner)
	require.Equal(t, won.Revision, lost.Revision)

	again, err := Claim(ctx, cli, "alice", "node-1")
	require.NoError(t, err)
	require.False(t, again.Won, "a re-claim writes nothing")
	require.True(t, again.Yours)
	require.Equal(t, won.Revision, again.Revision)

	other, err := Claim(ctx, cli, "bob", "node-2")
	require.NoError(t, err)
	require.True(t, other.Won)
	require.Greater(t, other.Revision, won.Revision)
}

func TestClaimConcurrentExactlyOneWins(t *testing.T) {
	_, cli := etcdtest.StartWithClient(t)
	ctx := testCtx(t)
	const n = 50
	results := make([]Result, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = Claim(ctx, cli, "nickname", fmt.Sprintf("owner-%02d", i))
		}()
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, r := range results {
		require.NoError(t, errs[i])
		if r.Won {
			require.Equal(t, -1, winner, "two winners: %d and %d", winner, i)
			winner = i
		}
	}
	require.NotEqual(t, -1, winner, "nobody won")
	want := results[winner]
	require.Equal(t, fmt.Sprintf("owner-%02d", winner), want.Owner)
	for i, r := range results {
		if i == winner {
			continue
		}
		require.False(t, r.Yours)
		require.Equal(t, want.Owner, r.Owner, "loser %d sees another owner", i)
		require.Equal(t, want.Revision, r.Revision, "loser %d sees another claim", i)
	}
}

func TestClaimTTLExpiresAndLoserRevokesItsLease(t *testing.T) {
	_, cli := etcdtest.StartWithClient(t)
	ctx := testCtx(t)

	won, err := Claim(ctx, cli, "short", "a", WithTTL(1500*time.Millisecond))
	require.NoError(t, err)
	require.True(t, won.Won)
	require.NotZero(t, won.Lease)
	require.GreaterOrEqual(t, won.TTL, 2*time.Second, "1.5s rounds up to 2s (and etcd's minimum is 2s)")

	wch := cli.Watch(ctx, won.Key, clientv3.WithRev(int64(won.Revision)+1))

	lost, err := Claim(ctx, cli, "short", "b", WithTTL(time.Minute))
	require.NoError(t, err)
	require.False(t, lost.Won)
	require.Equal(t, won.Lease, lost.Lease, "the loser reports the winner's lease")
	leases, err := cli.Leases(ctx)
	require.NoError(t, err)
	require.Len(t, leases.Leases, 1, "the loser's unused lease is revoked")

	g, err := Get(ctx, cli, "short")
	require.NoError(t, err)
	require.Equal(t, "a", g.Owner)
	require.Equal(t, won.TTL, g.TTL)
	require.LessOrEqual(t, g.Left, g.TTL)

	// Nothing keeps the lease alive: the claim goes away by itself.
	select {
	case wr := <-wch:
		require.NoError(t, wr.Err())
		require.NotEmpty(t, wr.Events)
		require.Equal(t, clientv3.EventTypeDelete, wr.Events[0].Type)
	case <-time.After(20 * time.Second):
		t.Fatal("claim with a 2s lease still there after 20s")
	}
	next, err := Claim(ctx, cli, "short", "b")
	require.NoError(t, err)
	require.True(t, next.Won)
	require.Greater(t, next.Revision, won.Revision)
}

func TestClaimRelease(t *testing.T) {
	_, cli := etcdtest.StartWithClient(t)
	ctx := testCtx(t)

	_, err := Release(ctx, cli, "job", "a")
	require.ErrorIs(t, err, ErrNotClaimed)

	won, err := Claim(ctx, cli, "job", "a")
	require.NoError(t, err)

	_, err = Release(ctx, cli, "job", "b")
	require.ErrorIs(t, err, ErrNotOwner)
	var noe *NotOwnerError
	require.True(t, errors.As(err, &noe))
	require.Equal(t, NotOwnerError{Name: "job", Owner: "a", Revision: won.Revision}, *noe)
	g, err := Get(ctx, cli, "job")
	require.NoError(t, err)
	require.Equal(t, "a", g.Owner, "a refused release leaves the claim")

	rel, err := Release(ctx, cli, "job", "a")
	require.NoError(t, err)
	require.Equal(t, won.Revision, rel.Revision)

	_, err = Get(ctx, cli, "job")
	require.ErrorIs(t, err, ErrNotClaimed)
	_, err = Release(ctx, cli, "job", "a")
	require.ErrorIs(t, err, ErrNotClaimed)

	again, err := Claim(ctx, cli, "job", "b")
	require.NoError(t, err)
	require.True(t, again.Won)
}

func TestClaimPrefix(t *testing.T) {
	_, cli := etcdtest.StartWithClient(t)
	ctx := testCtx(t)
	for _, p := range []string{"app/names", "app/names/"} {
		r, err := Claim(ctx, cli, "x", "o", WithPrefix(p))
		require.NoError(t, err)
		require.Equal(t, "app/names/x", r.Key)
	}
	r, err := Get(ctx, cli, "x", WithPrefix("app/names"))
	require.NoError(t, err)
	require.Equal(t, "o", r.Owner)
	_, err = Get(ctx, cli, "x")
	require.ErrorIs(t, err, ErrNotClaimed, "the default prefix is another namespace")
	require.Equal(t, "x", Key("", "x"))
}

// refuseClient fails the test if validation lets a request through.
type refuseClient struct {
	Client
	t *testing.T
}

func (r refuseClient) Txn(context.Context) clientv3.Txn {
	r.t.Fatal("request sent despite invalid arguments")
	return nil
}

func (r refuseClient) Grant(context.Context, int64) (*clientv3.LeaseGrantResponse, error) {
	r.t.Fatal("request sent despite invalid arguments")
	return nil, nil
}

func (r refuseClient) Get(context.Context, string, ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	r.t.Fatal("request sent despite invalid arguments")
	return nil, nil
}

func TestClaimValidation(t *testing.T) {
	c := refuseClient{t: t}
	ctx := context.Background()
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"claim empty name", func() error { _, err := Claim(ctx, c, "", "o"); return err }, session.ErrInvalidName},
		{"claim empty owner", func() error { _, err := Claim(ctx, c, "n", ""); return err }, ErrEmptyOwner},
		{"claim ttl too short", func() error { _, err := Claim(ctx, c, "n", "o", WithTTL(999*time.Millisecond)); return err }, session.ErrBadTTL},
		{"claim negative ttl", func() error { _, err := Claim(ctx, c, "n", "o", WithTTL(-time.Second)); return err }, session.ErrBadTTL},
		{"release empty owner", func() error { _, err := Release(ctx, c, "n", ""); return err }, ErrEmptyOwner},
		{"release empty name", func() error { _, err := Release(ctx, c, "", "o"); return err }, session.ErrInvalidName},
		{"get empty name", func() error { _, err := Get(ctx, c, ""); return err }, session.ErrInvalidName},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.call(), tc.want)
		})
	}
}

// Do dispatches each Op to its function; an unknown Op is ErrUnknownOp.
func TestDoDispatchesOps(t *testing.T) {
	_, cli := etcdtest.StartWithClient(t)
	ctx := testCtx(t)

	won, err := Do(ctx, cli, OpClaim, "bob", "node-1")
	require.NoError(t, err)
	require.True(t, won.Won)
	got, err := Do(ctx, cli, OpGet, "bob", "")
	require.NoError(t, err)
	require.Equal(t, "node-1", got.Owner)
	_, err = Do(ctx, cli, OpRelease, "bob", "node-2")
	require.ErrorIs(t, err, ErrNotOwner)
	_, err = Do(ctx, cli, OpRelease, "bob", "node-1")
	require.NoError(t, err)
	_, err = Do(ctx, cli, OpGet, "bob", "")
	require.ErrorIs(t, err, ErrNotClaimed)
	_, err = Do(ctx, cli, Op("steal"), "bob", "node-1")
	require.ErrorIs(t, err, ErrUnknownOp)
}
