package demo

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, etcdtest.IgnoreEtcdGoroutines()...)
}

func TestFencingStory(t *testing.T) {
	srv := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var steps []Step
	out, err := RunFencing(ctx, FencingConfig{DataDir: t.TempDir(), TTL: 2 * time.Second, Endpoints: srv.Endpoints()},
		func(s Step) { steps = append(steps, s) })
	require.NoError(t, err)
	require.Greater(t, out.TokenB, out.TokenA, "tokens must grow from holder to holder")
	require.True(t, out.ALostBeforeBAcquired, "A must be told of the loss before B holds the lock")
	require.True(t, out.FencedRejectedLateWrite)
	require.Equal(t, "final by B", out.FencedFinal)
	require.True(t, out.UnfencedLostUpdate)
	require.Equal(t, "draft by A (late)", out.UnfencedFinal)

	events := map[string]int{}
	for _, s := range steps {
		events[s.Actor+"/"+s.Event]++
	}
	for _, want := range []string{"A/acquired", "B/acquired", "coordkit/lost", "fenced/rejected", "unfenced/accepted"} {
		require.Equal(t, 1, events[want], "step %s", want)
	}
}
