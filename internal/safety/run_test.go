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
