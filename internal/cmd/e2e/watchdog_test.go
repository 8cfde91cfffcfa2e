package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

// Issue 32: the command under a hold is dead before the next grant even when
// the coordctl that holds the lease cannot act — frozen alone (SIGSTOP), or
// killed (SIGKILL) while the work is a grandchild in its group or in a group
// of its own (a shell's job control). Each case runs a first holder whose
// command appends "A" lines to a log every 10 ms, freezes or kills its
// coordctl, and lets a second holder (same lock) append "B" once granted.
// Appends are atomic and ordered: no "A" may follow the first "B". Before
// the watchdog the overlaps were 3,022 ms (SIGSTOP), 2,740 ms (grandchild)
// and 2,567 ms (set -m).
func TestWatchdogE2ENoOverlapWhenTheSupervisorCannotAct(t *testing.T) {
	t.Parallel()
	writer := `while :; do echo A >> "$LOG"; sleep 0.01; done`
	cases := []struct {
		name    string
		command []string
		fault   syscall.Signal
	}{
		{"coordctl frozen alone", []string{"sh", "-c", writer}, syscall.SIGSTOP},
		{"coordctl killed, work in a grandchild", []string{"sh", "-c", "sh -c '" + writer + "'; echo done"}, syscall.SIGKILL},
		{"coordctl killed, work in a job-control group", []string{"bash", "-c", "set -m; (" + writer + ") & wait"}, syscall.SIGKILL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// One case at a time: each runs an etcd and -race coordctl
			// processes that re-exec themselves, beside the package's other
			// parallel tests; three at once starved the first holder on a
			// loaded machine.
			log := filepath.Join(t.TempDir(), "log")
			env := append(lockEnv(etcdtest.Start(t).Endpoints()[0]), "LOG="+log)
			first := startCoordctl(t, env, append([]string{"lock", "wd", "--ttl", "2s", "--"}, tc.command...)...)
			// A cap, not a pause: with -race binaries beside the other
			// parallel e2e tests on a starved machine, a first grant and
			// two execs took over 20s twice.
			waitWrites(t, first, log, time.Minute)

			require.NoError(t, first.cmd.Process.Signal(tc.fault))
			second := startCoordctl(t, env, "lock", "wd", "--ttl", "2s", "--", "sh", "-c", `echo B >> "$LOG"`)
			require.Equal(t, exitOK, second.wait(t, 30*time.Second), second.stderr.String())

			// The first holder's tree had time to write after B, if it lived.
			time.Sleep(100 * time.Millisecond)
			lines := strings.Fields(readLog(t, log))
			firstB := indexOf(lines, "B")
			require.GreaterOrEqual(t, firstB, 0)
			require.NotContains(t, lines[firstB:], "A", "the first holder's command wrote after the next holder's first write")
			if tc.fault == syscall.SIGSTOP {
				require.NoError(t, first.cmd.Process.Signal(syscall.SIGCONT))
				require.Equal(t, exitLost, first.wait(t, 20*time.Second), first.stderr.String())
				require.Contains(t, first.stderr.String(), "the watchdog acted")
			}
		})
	}
}

// waitWrites waits until the holder's command has written three "A" lines,
// failing with the holder's stderr if it exits first or within limit
// does not write.
func waitWrites(t *testing.T, holder *proc, log string, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for strings.Count(readLog(t, log), "A") < 3 {
		select {
		case <-holder.done:
			t.Fatalf("the first holder exited (%d) before its command wrote; stderr: %s", holder.code, holder.stderr.String())
		case <-deadline:
			t.Fatalf("the first holder's command did not write within %s; stderr: %s", limit, holder.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return ""
	}
	require.NoError(t, err)
	return string(b)
}

func indexOf(lines []string, s string) int {
	for i, l := range lines {
		if l == s {
			return i
		}
	}
	return -1
}
