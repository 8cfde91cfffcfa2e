package e2e

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/testbin"
)

// The exit codes of coordctl (DESIGN.md, "coordctl conventions"): the
// numbers are the contract a user's script relies on, so they are spelled
// out here rather than taken from internal/cmd/cmdutil/exit.go.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitNotAcquired = 3
	exitLost        = 4
	exitStale       = 5
	exitUnknown     = 6
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Remove()
	if code == 0 {
		if err := goleak.Find(etcdtest.IgnoreEtcdGoroutines()...); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

// coordctlBinary is the built coordctl (internal/testbin: make test's, or
// one built for this test binary).
func coordctlBinary(t testing.TB) string {
	t.Helper()
	return testbin.Path(t, testbin.Coordctl)
}

// sidecarBinary is the built coordkit-sidecar, with the build tags `make
// build` and `make image` give it.
func sidecarBinary(t testing.TB) string {
	t.Helper()
	return testbin.Path(t, testbin.Sidecar)
}
