package etcdembed_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/etcdembed"
)

// Run serves until ctx ends, tells ready where, and returns nil then; a
// failing ready stops it with ready's error.
func TestRunServesUntilCancelled(t *testing.T) {
	t.Parallel() // a member or cluster of its own
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	readyAt := make(chan []string, 1)
	go func() {
		done <- etcdembed.Run(ctx, etcdembed.Config{DataDir: t.TempDir()}, func(eps []string) error {
			readyAt <- eps
			return nil
		})
	}()
	eps := <-readyAt
	require.NotEmpty(t, eps)
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	_, err = cli.Put(ctx, "k", "v")
	require.NoError(t, err, "the member serves once ready was called")
	require.NoError(t, cli.Close())
	cancel()
	require.NoError(t, <-done)

	boom := errors.New("boom")
	err = etcdembed.Run(context.Background(), etcdembed.Config{DataDir: t.TempDir()}, func([]string) error { return boom })
	require.ErrorIs(t, err, boom)

	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	require.NoError(t, etcdembed.Run(cctx, etcdembed.Config{DataDir: t.TempDir()}, func([]string) error {
		t.Error("ready called after ctx ended")
		return nil
	}), "a start that ctx ended is nil")
}
