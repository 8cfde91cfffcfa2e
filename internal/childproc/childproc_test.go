package childproc

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Tests that set Config.Watchdog run this binary as the watchdog.
	if len(os.Args) > 1 && os.Args[1] == WatchdogArg {
		// A watchdog slow to start, as a large binary is on a starved
		// machine (TestWatchdogSlowStartKeepsTheExtensions).
		if d, err := time.ParseDuration(os.Getenv("COORDKIT_TEST_WATCHDOG_START_DELAY")); err == nil {
			time.Sleep(d)
		}
		os.Exit(WatchdogMain(os.Args[2:]))
	}
	goleak.VerifyTestMain(m)
}

func TestMergeEnvOverridesInherited(t *testing.T) {
	got := MergeEnv([]string{"A=1", "COORD_FENCING_TOKEN=old", "B=2"}, map[string]string{"COORD_FENCING_TOKEN": "42", "C": "3"})
	require.Equal(t, []string{"A=1", "B=2", "C=3", "COORD_FENCING_TOKEN=42"}, got)
}

func TestExitCodePassesThroughAndEnvIsSet(t *testing.T) {
	t.Setenv("COORD_LOCK_NAME", "inherited")
	var out bytes.Buffer
	c, err := Start(Config{Path: "sh", Args: []string{"-c", `echo "$COORD_LOCK_NAME"; exit 7`},
		Env: map[string]string{"COORD_LOCK_NAME": "jobs"}, Stdout: &out})
	require.NoError(t, err)
	require.Equal(t, 7, c.ExitCode())
	require.Equal(t, "jobs\n", out.String())
}

func TestStopReachesTheWholeGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "grandchild")
	// The shell starts a grandchild and waits; SIGTERM to the group must end both.
	c, err := Start(Config{Path: "sh", Args: []string{"-c", `sleep 300 & echo $! > ` + pidFile + `; wait`}, KillGrace: 5 * time.Second})
	require.NoError(t, err)
	grandchild := waitPid(t, pidFile)
	code := c.Stop()
	require.Equal(t, 128+int(syscall.SIGTERM), code)
	requireGone(t, grandchild)
}

func TestStopEscalatesToSIGKILL(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	c, err := Start(Config{Path: "sh", Args: []string{"-c", `trap '' TERM; echo 1 > ` + ready + `; while :; do sleep 0.05; done`},
		KillGrace: 300 * time.Millisecond})
	require.NoError(t, err)
	waitPid(t, ready)
	start := time.Now()
	code := c.Stop()
	require.Equal(t, 128+int(syscall.SIGKILL), code)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	require.Less(t, time.Since(start), 5*time.Second)
}

func TestStartErrors(t *testing.T) {
	_, err := Start(Config{})
	require.ErrorIs(t, err, ErrNoCommand)
	_, err = Start(Config{Path: "/nonexistent/command"})
	require.ErrorContains(t, err, "/nonexistent/command")
}

func waitPid(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(file); err == nil && strings.TrimSpace(string(b)) != "" {
			var pid int
			for _, ch := range strings.TrimSpace(string(b)) {
				pid = pid*10 + int(ch-'0')
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond) // polling a file the child writes: there is no event to wait on
	}
	t.Fatalf("%s never written", file)
	return 0
}

func requireGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); err != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d still alive", pid)
}
