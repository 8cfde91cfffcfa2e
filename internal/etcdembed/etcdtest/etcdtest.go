// Package etcdtest starts an in-process etcd member for tests and connects a
// client to it. Both are closed by t.Cleanup.
package etcdtest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/coordkit/coordkit/internal/etcdembed"
)

// Start starts a single-member etcd on free loopback ports in t.TempDir().
// fsync is off: tests that measure durability start their own member.
func Start(t testing.TB) *etcdembed.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := etcdembed.Start(ctx, etcdembed.Config{
		DataDir:       t.TempDir(),
		UnsafeNoFsync: true,
	})
	if err != nil {
		t.Fatalf("start embedded etcd: %v", err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// Client returns a new client of srv, closed by t.Cleanup.
func Client(t testing.TB, srv *etcdembed.Server) *clientv3.Client {
	t.Helper()
	return Dial(t, srv.Endpoints())
}

// Dial returns a new client of endpoints with gRPC's dial options opts
// (an interceptor that records or breaks requests), closed by t.Cleanup.
func Dial(t testing.TB, endpoints []string, opts ...grpc.DialOption) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: opts,
	})
	if err != nil {
		t.Fatalf("connect to embedded etcd: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// StartWithClient is Start followed by Client.
func StartWithClient(t testing.TB) (*etcdembed.Server, *clientv3.Client) {
	t.Helper()
	srv := Start(t)
	return srv, Client(t, srv)
}

// IgnoreEtcdGoroutines lists goroutines that etcd's client and server leave
// running after Close by design (gRPC and zap background loops), for
// goleak.VerifyTestMain.
func IgnoreEtcdGoroutines() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"),
		goleak.IgnoreTopFunction("go.etcd.io/etcd/client/pkg/v3/logutil.(*MergeLogger).outputLoop"),
	}
}
