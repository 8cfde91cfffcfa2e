package etcdembed_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/etcdembed"
)

// Wait serves until its context ends, then returns nil: a clean stop.
func TestWaitReturnsWhenContextEnds(t *testing.T) {
	t.Parallel() // a member or cluster of its own
	srv, err := etcdembed.Start(context.Background(), etcdembed.Config{DataDir: t.TempDir(), UnsafeNoFsync: true})
	require.NoError(t, err)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Wait(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned before its context ended: %v", err)
	case <-time.After(100 * time.Millisecond): // not returning can only be sampled
	}
	cancel()
	require.NoError(t, <-done)
}
