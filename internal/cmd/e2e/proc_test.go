package e2e

import (
	"bufio"
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/testio"
)

// proc is a coordctl process started by an end-to-end test; its stdout is
// read line by line.
type proc struct {
	cmd    *exec.Cmd
	lines  chan string // stdout, line by line
	stderr *testio.SyncBuffer
	done   chan struct{}
	code   int
}

func startCoordctl(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(coordctlBinary(t), args...)
	cmd.Env = append(cmd.Environ(), env...)
	p := &proc{cmd: cmd, lines: make(chan string, 64), stderr: &testio.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			default: // nobody reads that much; never block the process on it
			}
		}
		close(p.lines)
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.code = ee.ExitCode()
		} else if err != nil {
			p.code = -1
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *proc) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		require.True(t, ok, "coordctl closed stdout; stderr: %s", p.stderr.String())
		return l
	case <-time.After(20 * time.Second):
		t.Fatalf("no output line within 20s; stderr: %s", p.stderr.String())
		return ""
	}
}

func (p *proc) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(within):
		t.Fatalf("coordctl did not exit within %s; stderr: %s", within, p.stderr.String())
		return 0
	}
}

func lockEnv(endpoint string) []string {
	return []string{"COORDCTL_ENDPOINTS=" + endpoint}
}

// stop sends SIGTERM and returns the exit code.
func (p *proc) stop(t *testing.T) int {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	return p.wait(t, 20*time.Second)
}
