package etcdembed_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestZZExp(t *testing.T) {
	c := startCluster(t, t.TempDir())
	ctx := context.Background()
	cli := clusterClient(t, c.Endpoints()...)
	require.NoError(t, putOK(ctx, cli, "k", "v1"))
	waitFor(t, 10*time.Second, "leader", func() bool { return c.Leader() != 0 })
	l := c.Leader()
	require.NoError(t, c.Isolate(l))
	time.Sleep(2500 * time.Millisecond)
	c.Heal()
	start := time.Now()
	for round := 0; round < 5; round++ {
		for i, ep := range c.Endpoints() {
			err := putOK(ctx, clusterClient(t, ep), "k", "v2")
			t.Logf("%.1fs put via member %d: %v leader=%d status=%+v", time.Since(start).Seconds(), i+1, err, c.Leader(), c.Status().Members[i].Leader)
		}
		time.Sleep(time.Second)
	}
}
