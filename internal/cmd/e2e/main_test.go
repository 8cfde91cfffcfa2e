package e2e

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
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
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	if code == 0 {
		if err := goleak.Find(etcdtest.IgnoreEtcdGoroutines()...); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// coordctlBinary builds cmd/coordctl with the race detector once per test
// binary and returns its path.
func coordctlBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "coordctl-e2e-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "coordctl")
		cmd := exec.Command("go", "build", "-race", "-o", binPath, "github.com/coordkit/coordkit/cmd/coordctl")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("build coordctl: %v", buildErr)
	}
	return binPath
}

var (
	slimOnce sync.Once
	slimPath string
	slimErr  error
)

// sidecarBinary builds cmd/coordkit-sidecar with the race detector and
// the build tags `make build` and `make image` give it (the Makefile's
// SIDECAR_TAGS), once per test binary, and returns its path.
func sidecarBinary(t testing.TB) string {
	t.Helper()
	coordctlBinary(t) // binDir
	slimOnce.Do(func() {
		mk, err := os.ReadFile(filepath.Join("..", "..", "..", "Makefile"))
		if err != nil {
			slimErr = err
			return
		}
		m := regexp.MustCompile(`(?m)^SIDECAR_TAGS \?= (\S+)$`).FindSubmatch(mk)
		if m == nil {
			slimErr = errors.New("no SIDECAR_TAGS in the Makefile")
			return
		}
		slimPath = filepath.Join(binDir, "coordkit-sidecar")
		cmd := exec.Command("go", "build", "-race", "-tags", string(m[1]), "-o", slimPath, "github.com/coordkit/coordkit/cmd/coordkit-sidecar")
		if out, err := cmd.CombinedOutput(); err != nil {
			slimErr = errors.New(string(out))
		}
	})
	if slimErr != nil {
		t.Fatalf("build coordkit-sidecar: %v", slimErr)
	}
	return slimPath
}

// freeAddr is a loopback address nothing listens on (at the moment).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// syncBuffer is a bytes.Buffer safe to read while a process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
