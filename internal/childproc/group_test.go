//go:build linux

package childproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// waitExited blocks until process pid has exited (a zombie counts: it runs
// no more), using a pidfd, which becomes readable when the process ends.
func waitExited(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // gone and reaped
	}
	require.NoError(t, err)
	defer unix.Close(fd)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		require.NoError(t, err)
		if n == 1 {
			return
		}
	}
}

// exited reports, without waiting, whether pid has exited.
func exited(t *testing.T, pid int) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true
	}
	require.NoError(t, err)
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	require.NoError(t, err)
	return n == 1
}

// The leader exits 0 at once, leaving a background job in its group: Stop
// ends the job (SIGTERM to the group) and returns the leader's status only
// once the job is gone.
func TestStopEndsWhatTheLeaderLeftBehind(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "bg")
	c, err := Start(Config{Path: "sh", Args: []string{"-c", `sleep 300 & echo $! > ` + pidFile + `; exit 0`}})
	require.NoError(t, err)
	bg := waitPid(t, pidFile)
	<-c.Done()
	require.True(t, c.GroupAlive(), "the background sleep is still in the group")
	require.False(t, exited(t, bg))
	require.Equal(t, 0, c.Stop())
	require.True(t, exited(t, bg), "Stop returned while the background job ran")
	require.False(t, c.GroupAlive())
}

// A member that ignores SIGTERM and outlives its leader gets SIGKILL after
// the grace period; Stop returns only when it is gone.
func TestStopKillsAStubbornMemberAfterTheLeaderExited(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "bg")
	c, err := Start(Config{Path: "sh", Args: []string{"-c",
		`sh -c 'trap "" TERM; echo $$ > ` + pidFile + `; while :; do sleep 0.05; done' & exit 3`},
		KillGrace: 200 * time.Millisecond})
	require.NoError(t, err)
	bg := waitPid(t, pidFile)
	<-c.Done() // the leader has exited (a SIGTERM before that would be its status)
	start := time.Now()
	require.Equal(t, 3, c.Stop())
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "SIGKILL came before the grace period")
	require.True(t, exited(t, bg))
	require.False(t, c.GroupAlive())
}

// An empty group: Stop after Done returns at once with the status.
func TestStopAfterACleanExit(t *testing.T) {
	c, err := Start(Config{Path: "sh", Args: []string{"-c", "exit 4"}})
	require.NoError(t, err)
	<-c.Done()
	require.False(t, c.GroupAlive())
	require.Equal(t, 4, c.Stop())
}

// kill -9 of the supervising process: the direct child dies with it
// (Pdeathsig). The supervisor is this test binary run again as a helper.
func TestChildDiesWithItsSupervisor(t *testing.T) {
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperSupervisor$")
	helper.Env = append(os.Environ(), "CHILDPROC_HELPER=1")
	out, err := helper.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, helper.Start())
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
	var pid int
	_, err = fmt.Fscan(out, &pid)
	require.NoError(t, err)
	require.False(t, exited(t, pid))

	require.NoError(t, helper.Process.Signal(syscall.SIGKILL))
	_ = helper.Wait()
	waitExited(t, pid) // without Pdeathsig the sleep runs 300 s and the test times out
}

// TestHelperSupervisor is not a test: TestChildDiesWithItsSupervisor runs
// it in a process of its own, which starts a child, prints its pid and
// blocks until it is killed.
func TestHelperSupervisor(t *testing.T) {
	if os.Getenv("CHILDPROC_HELPER") != "1" {
		t.Skip("helper process only")
	}
	// Start from another goroutine, which then ends: the child must survive
	// that (Pdeathsig is tied to a thread, not to the process).
	started := make(chan *Child)
	go func() {
		c, err := Start(Config{Path: "sleep", Args: []string{"300"}})
		if err != nil {
			panic(err)
		}
		started <- c
	}()
	c := <-started
	fmt.Println(strconv.Itoa(c.Pid()))
	<-c.Done()
	fmt.Fprintln(os.Stderr, "child ended:", strings.TrimSpace(strconv.Itoa(c.ExitCode())))
	os.Exit(1)
}
