package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLabScheduleIsSeeded(t *testing.T) {
	o := ScheduleOptions{Nodes: 5, Duration: 2 * time.Second, Faults: 4}
	a, b := GenerateSchedule(9, o), GenerateSchedule(9, o)
	require.Equal(t, a, b)
	require.NotEqual(t, a, GenerateSchedule(10, o))
	for i := 1; i < len(a); i++ {
		require.LessOrEqual(t, a[i-1].At, a[i].At, "in time order")
	}
}

// Under a seeded nemesis, linearizable reads and writes stay linearizable.
func TestLabNemesisHistoryLinearizable(t *testing.T) {
	cfg := labConfig(5)
	cfg.OpTimeout = 500 * time.Millisecond
	c := startLab(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := c.NewClient(0)
			w := NewWorkload(int64(i), 3)
			for ctx.Err() == nil {
				op := w.Mixed(0.5, ReadIndex)
				if i == 2 {
					op = w.Mixed(0.5, ReadLog)
				}
				_, _ = cl.Do(ctx, op)
			}
		}()
	}
	errs := c.RunSchedule(ctx, GenerateSchedule(3, ScheduleOptions{Nodes: 5, Duration: 1500 * time.Millisecond, Faults: 3}))
	require.Empty(t, errs)
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := c.WaitLeader(wctx)
	wcancel()
	require.NoError(t, err)
	cancel()
	wg.Wait()
	res := c.Check(20 * time.Second)
	require.True(t, res.Linearizable, "verdict %s over %d ops", res.Verdict, res.Ops)
	require.Greater(t, res.Ops, 20)
}
