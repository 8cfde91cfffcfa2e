package primitive_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/internal/faultproxy"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/session"
)

// A handle whose own session was lost while etcd does not answer keeps to
// the caller's ctx: it waits for the revoke of the lost lease (up to
// session.Close's 3s) only while ctx lasts, and the revoke goes on in the
// background. Get waited for it whatever ctx said, so a Lock with a 300ms
// deadline took 3s.
func TestLazyGetAfterALossKeepsToCtx(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(etcd.Endpoints()[0])
	require.NoError(t, err)
	faults := faultproxy.NewFaults(1)
	px, err := faultproxy.Start("127.0.0.1:0", u.Host, 1, nil, faults)
	require.NoError(t, err)
	defer px.Close()
	defer faults.Heal() // before Close: a held write keeps it waiting
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{px.Addr()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	defer cli.Close()

	l := primitive.NewLazy(cli, nil, session.WithTTL(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := l.Get(ctx)
	require.NoError(t, err)

	faults.SetClientCut(1)
	select {
	case <-s.Done(): // the local deadline passed without a keepalive answer
	case <-ctx.Done():
		t.Fatal("the session was not lost with its link to etcd cut")
	}
	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	start := time.Now()
	_, err = l.Get(short)
	took := time.Since(start)
	require.Error(t, err, "no grant while etcd does not answer")
	require.Less(t, took, 2*time.Second, "Get waited for the lost lease's revoke")
	require.Equal(t, s, l.Current(), "until a successor is granted, Current is the lost session")

	faults.Heal()
	s2, err := l.Get(ctx)
	require.NoError(t, err)
	require.NotEqual(t, s.Lease(), s2.Lease())
	require.NoError(t, l.Close())
}
