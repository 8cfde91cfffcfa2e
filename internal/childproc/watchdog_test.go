//go:build linux

package childproc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The test binary is the watchdog (TestMain).
func watched(cfg Config) Config {
	cfg.Watchdog = os.Args[0]
	return cfg
}

// Under the watchdog the command runs as before: environment, output and
// exit status pass through, and its pid is its group's.
func TestWatchdogRunsTheCommand(t *testing.T) {
	var out bytes.Buffer
	c, err := Start(watched(Config{Path: "sh", Args: []string{"-c", `echo "$COORD_LOCK_NAME $$"; exit 7`},
		Env: map[string]string{"COORD_LOCK_NAME": "jobs"}, Stdout: &out}))
	require.NoError(t, err)
	require.Equal(t, 7, c.ExitCode())
	require.Equal(t, 7, c.Stop(), "Stop returns the command's status")
	require.Equal(t, "jobs "+strconv.Itoa(c.Pid())+"\n", out.String())

	_, err = Start(watched(Config{Path: "/nonexistent/command"}))
	require.ErrorContains(t, err, "/nonexistent/command")
}

// Nothing extends the deadline (the supervisor is frozen): the watchdog
// stops the command and a descendant that left its group and session
// (setsid) on its own, SIGTERM at the first instant, SIGKILL at the second.
// The first is 1.5 s ahead: with 300 ms, a watchdog that took longer to
// start (make test beside a CPU hog) found both instants past and sent
// SIGKILL alone.
func TestWatchdogStopsTheTreeAtAnUnextendedDeadline(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "escaped")
	term, kill := time.Now().Add(1500*time.Millisecond), time.Now().Add(2500*time.Millisecond)
	c, err := Start(watched(Config{Path: "sh", Args: []string{"-c", `setsid sh -c 'trap "" TERM; sleep 300' & echo $! > ` + pidFile + `; trap "" TERM; sleep 300`},
		Deadline: func() (time.Time, time.Time) { return term, kill }}))
	require.NoError(t, err)
	escaped := waitPid(t, pidFile)
	require.Equal(t, "term", <-c.Fired())
	require.Equal(t, "kill", <-c.Fired())
	<-c.Done()
	require.False(t, time.Now().Before(kill), "SIGKILL not before the kill instant")
	require.Equal(t, 128+int(syscall.SIGKILL), c.ExitCode())
	requireGone(t, escaped)
	c.Stop()
}

// An extended deadline is honoured: the command outlives the first pair.
// The deadlines are seconds ahead, as a lease's are: with 300ms, a test
// process starved on a loaded machine once sent no extension in time, and
// the watchdog rightly stopped the command.
func TestWatchdogDeadlineExtended(t *testing.T) {
	start := time.Now()
	c, err := Start(watched(Config{Path: "sleep", Args: []string{"4"},
		Deadline: func() (time.Time, time.Time) {
			return time.Now().Add(2 * time.Second), time.Now().Add(3 * time.Second)
		}}))
	require.NoError(t, err)
	require.Equal(t, 0, c.ExitCode(), "kept alive by extensions")
	require.GreaterOrEqual(t, time.Since(start), 4*time.Second)
	c.Stop()
}

// The watchdog takes longer to start than the deadline it was started
// with (a large binary on a starved machine: CI saw a first holder's
// command stopped before its first write), while the supervisor's lease
// was extended meanwhile: the extensions sent during the start count, and
// the command runs. Before, extensions were sent only once the watchdog
// had reported the command's pid, and a deadline that passed while it
// started fired SIGTERM at once.
func TestWatchdogSlowStartKeepsTheExtensions(t *testing.T) {
	var calls atomic.Int32
	first := time.Now().Add(100 * time.Millisecond)
	c, err := Start(watched(Config{Path: "sleep", Args: []string{"1"},
		Env: map[string]string{"COORDKIT_TEST_WATCHDOG_START_DELAY": "600ms"},
		Deadline: func() (time.Time, time.Time) {
			if calls.Add(1) == 1 {
				return first, first.Add(100 * time.Millisecond)
			}
			return time.Now().Add(2 * time.Second), time.Now().Add(3 * time.Second)
		}}))
	require.NoError(t, err)
	require.Equal(t, 0, c.ExitCode(), "the command ran to its end")
	select {
	case f := <-c.Fired():
		t.Fatalf("the watchdog fired %q although the deadline had been extended", f)
	default:
	}
	c.Stop()
}

// The supervisor's pipe closes (it was killed): the watchdog stops the
// tree at once, SIGTERM then SIGKILL after the grace.
func TestWatchdogStopsTheTreeWhenTheSupervisorGoes(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "escaped")
	c, err := Start(watched(Config{Path: "sh", Args: []string{"-c", `setsid sleep 300 & echo $! > ` + pidFile + `; sleep 300`},
		KillGrace: 200 * time.Millisecond}))
	require.NoError(t, err)
	escaped := waitPid(t, pidFile)
	require.NoError(t, c.watchdog.control.Close())
	require.Equal(t, "orphaned", <-c.Fired())
	<-c.Done()
	requireGone(t, escaped)
	<-c.watchdog.exited
}

// Stop returns only once every descendant is dead, also one that left the
// command's process group after the command exited.
func TestWatchdogStopReapsWhatLeftTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "escaped")
	c, err := Start(watched(Config{Path: "sh", Args: []string{"-c", `setsid sleep 300 & echo $! > ` + pidFile}}))
	require.NoError(t, err)
	escaped := waitPid(t, pidFile)
	require.Equal(t, 0, c.ExitCode())
	require.Equal(t, 0, c.Stop())
	requireGone(t, escaped)
}

// The command does not inherit the watchdog's signal handling: a shell can
// trap SIGTERM (a signal ignored at exec could not even be trapped), and a
// start failure keeps "not found" (127) apart from "not executable" (126).
func TestWatchdogCommandGetsDefaultSignalsAndStartErrors(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	c, err := Start(watched(Config{Path: "sh", Args: []string{"-c", `trap 'exit 9' TERM; echo $$ > ` + ready + `; while :; do sleep 0.05; done`},
		KillGrace: 5 * time.Second}))
	require.NoError(t, err)
	waitPid(t, ready)
	require.NoError(t, c.Signal(syscall.SIGTERM))
	require.Equal(t, 9, c.ExitCode())
	c.Stop()

	_, err = Start(watched(Config{Path: "/nonexistent/command"}))
	require.ErrorIs(t, err, os.ErrNotExist)
	notExec := filepath.Join(t.TempDir(), "plain")
	require.NoError(t, os.WriteFile(notExec, []byte("x"), 0o644))
	_, err = Start(watched(Config{Path: notExec}))
	require.Error(t, err)
	require.NotErrorIs(t, err, os.ErrNotExist)
}
