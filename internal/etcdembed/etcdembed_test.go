package etcdembed_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, etcdtest.IgnoreEtcdGoroutines()...)
}

func TestPutGetAndRestartKeepsData(t *testing.T) {
	t.Parallel() // a member or cluster of its own
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	srv, err := etcdembed.Start(ctx, etcdembed.Config{DataDir: dir})
	require.NoError(t, err)
	cli := etcdtest.Client(t, srv)
	_, err = cli.Put(ctx, "k", "v")
	require.NoError(t, err)
	require.NoError(t, cli.Close())
	srv.Close()

	srv.Close() // a second Close is a no-op

	srv2, err := etcdembed.Start(ctx, etcdembed.Config{DataDir: dir})
	require.NoError(t, err)
	defer srv2.Close()
	cli2 := etcdtest.Client(t, srv2)
	resp, err := cli2.Get(ctx, "k")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	require.Equal(t, "v", string(resp.Kvs[0].Value))
}

func TestBadConfig(t *testing.T) {
	ctx := context.Background()
	_, err := etcdembed.Start(ctx, etcdembed.Config{})
	require.ErrorContains(t, err, "DataDir")
	_, err = etcdembed.Start(ctx, etcdembed.Config{DataDir: t.TempDir(), ClientURL: "127.0.0.1:1"})
	require.ErrorContains(t, err, "bad client URL")
}

// Start retries with new ports only when it chose them; a port the caller
// gave that is taken is reported, not replaced.
func TestStartKeepsGivenPortsOnBindError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	_, err = etcdembed.Start(ctx, etcdembed.Config{DataDir: t.TempDir(), ClientURL: "http://" + taken.Addr().String()})
	require.ErrorContains(t, err, "address already in use", "given ports are not replaced")
}

// A second member on a data directory in use fails at once with
// ErrDataDirInUse; etcd alone would wait for ever on bbolt's file lock.
func TestStartOnDataDirInUseFailsAtOnce(t *testing.T) {
	t.Parallel() // a member or cluster of its own
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	srv, err := etcdembed.Start(ctx, etcdembed.Config{DataDir: dir, UnsafeNoFsync: true})
	require.NoError(t, err)

	_, err = etcdembed.Start(ctx, etcdembed.Config{DataDir: dir, UnsafeNoFsync: true})
	require.ErrorIs(t, err, etcdembed.ErrDataDirInUse)
	var inUse *etcdembed.DataDirInUseError
	require.ErrorAs(t, err, &inUse)
	require.Equal(t, "etcdembed: data dir "+dir+" is in use by another process", err.Error())

	// Once the first member is closed, the directory is free again.
	srv.Close()
	srv2, err := etcdembed.Start(ctx, etcdembed.Config{DataDir: dir, UnsafeNoFsync: true})
	require.NoError(t, err)
	srv2.Close()
}
