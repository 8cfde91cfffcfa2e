package etcddial

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, etcdtest.IgnoreEtcdGoroutines()...)
}
