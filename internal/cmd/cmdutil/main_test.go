package cmdutil

import (
	"testing"

	"go.uber.org/goleak"
)

// The commands' tests here run no etcd; none may leave a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
