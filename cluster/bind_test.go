package cluster

import (
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// A future raft never resolves (a VerifyLeader still queued when raft shut
// down) must still return once the node stops.
func TestLabBindShutdownUnblocksRaftFutures(t *testing.T) {
	c := startLab(t, labConfig(3))
	l, _ := leaderAndFollower(t, c)
	inc := c.current(l)
	// The leader itself frozen: its main loop cannot take the request.
	require.NoError(t, c.Pause(l, 0))
	f := inc.raft.VerifyLeader()
	stop := make(chan struct{})
	bindShutdown(f, stop)
	fld := reflect.ValueOf(f).Elem().FieldByName("ShutdownCh")
	require.True(t, fld.IsValid(), "raft's futures embed deferError with ShutdownCh")
	require.False(t, fld.IsNil(), "bindShutdown set it")
	close(stop)
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, raft.ErrRaftShutdown)
	case <-time.After(5 * time.Second):
		t.Fatal("future not released by its shutdown channel")
	}
	require.NoError(t, c.Resume(l))
	// Apply's future has the same shape, so writes wait without a goroutine.
	require.True(t, bindShutdown(c.current(l).raft.Apply(EncodePut("k", "v"), time.Second), make(chan struct{})))
}
