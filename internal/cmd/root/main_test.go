package root

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(etcdtest.IgnoreEtcdGoroutines()...); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
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
	code := run(ctx, args, cmdutil.IOStreams{In: bytes.NewReader(nil), Out: out, ErrOut: &errOut}, getenv)
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
