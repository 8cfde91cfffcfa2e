package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
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

// coordctlBinary builds cmd/coordctl once per test binary and returns its path,
// for end-to-end tests that drive coordctl as a user would.
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

// cliResult is what an in-process coordctl invocation produced.
type cliResult struct {
	Code   int
	Stdout string
	Stderr string
}

// runInProcess runs coordctl's command tree in the test process with buffers
// as streams and the given environment lookup.
func runInProcess(ctx context.Context, env map[string]string, args ...string) cliResult {
	return runInProcessNotify(ctx, env, nil, args...)
}

// runInProcessNotify is runInProcess that also closes firstOut (when not
// nil) as soon as the command writes its first bytes to stdout: the event
// a test waits on before it interrupts a command that holds something.
func runInProcessNotify(ctx context.Context, env map[string]string, firstOut chan<- struct{}, args ...string) cliResult {
	var errOut bytes.Buffer
	out := &notifyingBuffer{first: firstOut}
	getenv := func(k string) string { return env[k] }
	code := run(ctx, args, ioStreams{In: bytes.NewReader(nil), Out: out, ErrOut: &errOut}, getenv)
	return cliResult{Code: code, Stdout: out.String(), Stderr: errOut.String()}
}

type notifyingBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan<- struct{}
}

func (b *notifyingBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.first != nil && len(p) > 0 {
		close(b.first)
		b.first = nil
	}
	return b.buf.Write(p)
}

func (b *notifyingBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
