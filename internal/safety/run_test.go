package safety

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		// etcd's peer prober may still wait on a request a fault swallowed
		// when its member closes; it gives up at its 5s read timeout.
		deadline := time.Now().Add(15 * time.Second)
		err := goleak.Find(etcdtest.IgnoreEtcdGoroutines()...)
		for err != nil && time.Now().Before(deadline) {
			time.Sleep(500 * time.Millisecond)
			err = goleak.Find(etcdtest.IgnoreEtcdGoroutines()...)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// clusterSlots bounds the check runs this test binary makes at once. Each
// Run starts a three-member etcd in this process; under -parallel 8, with
// the race detector, on two cores beside the other packages (make test),
// eight clusters at once starved each other's elections and heartbeats:
// TestSuiteSeeds made 9 writes in 120 s at load 8-13 (alone it finishes
// in about 6 s).
var clusterSlots = make(chan struct{}, 3)

// takeClusters takes n of clusterSlots for the rest of the test (taken
// before the test starts its own deadlines, so waiting costs it nothing).
func takeClusters(t *testing.T, n int) {
	t.Helper()
	for range n {
		clusterSlots <- struct{}{}
	}
	t.Cleanup(func() {
		for range n {
			<-clusterSlots
		}
	})
}
