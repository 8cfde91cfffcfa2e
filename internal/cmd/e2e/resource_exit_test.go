package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/nettest"
	"github.com/coordkit/coordkit/internal/testio"
)

// Issue 32: `resource put ... | true` died of SIGPIPE (141) and
// `> /dev/full` exited 1 after the write was applied, so a script retried
// and wrote twice. The exit now says what happened to the request: 0, the
// failed print noted on stderr.
func TestResourceE2EExitFollowsTheWriteNotTheOutput(t *testing.T) {
	t.Parallel()
	bin := coordctlBinary(t)
	url := startResourceProcess(t, bin, t.TempDir()).url
	closedPipe := func(t *testing.T) *os.File {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		require.NoError(t, r.Close())
		t.Cleanup(func() { w.Close() })
		return w
	}
	devFull := func(t *testing.T) *os.File {
		f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}
	for name, stdout := range map[string]func(*testing.T) *os.File{"closed pipe": closedPipe, "full device": devFull} {
		t.Run(name, func(t *testing.T) {
			key := "k-" + name
			for _, args := range [][]string{
				{"resource", "put", key, "v", "--url", url, "--token", "7", "--scope", key + "/"},
				{"resource", "fence", "--url", url, "--token", "8", "--scope", key + "/"},
			} {
				cmd := exec.Command(bin, args...)
				cmd.Stdout = stdout(t)
				var stderr testio.SyncBuffer
				cmd.Stderr = &stderr
				err := cmd.Run()
				require.NoError(t, err, "%v: the request was applied; stderr: %s", args, stderr.String())
			}
			e, err := (&fencing.Client{BaseURL: url}).Get(context.Background(), key)
			require.NoError(t, err)
			require.Equal(t, "v", e.Value)
			require.EqualValues(t, 1, e.Version, "written once")
		})
	}
}

// A write whose answer never came may have been applied: `resource put` and
// `resource fence` to a frozen resource exited 1, which a script retries,
// and the resource applied the write once it ran again (so the retry wrote
// twice). Such a write is an outcome unknown now, exit 6 as for coordctl
// sql's lost COMMIT; a read that got no answer, and a request that never
// reached the resource, exit 1.
func TestResourceE2EUnansweredWriteIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	bin := coordctlBinary(t)
	res := startResourceProcess(t, bin, t.TempDir())
	// run returns coordctl's exit code and stderr (-1 and the error when it
	// could not be run); it is called from goroutines, so it asserts nothing.
	run := func(args ...string) (int, string) {
		cmd := exec.Command(bin, args...)
		var stderr testio.SyncBuffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			return ee.ExitCode(), stderr.String()
		case err != nil:
			return -1, err.Error()
		}
		return 0, stderr.String()
	}

	require.NoError(t, res.cmd.Process.Signal(syscall.SIGSTOP))
	stopped := true
	t.Cleanup(func() {
		if stopped {
			_ = res.cmd.Process.Signal(syscall.SIGCONT)
		}
	})
	// The kernel still accepts connections and their bytes for the stopped
	// process, so each request is sent in full and never answered.
	cases := []struct {
		args     []string
		wantCode int
		wantText string
	}{
		{[]string{"resource", "put", "frozen", "v1", "--token", "7", "--scope", "s/"}, exitUnknown, "outcome unknown"},
		{[]string{"resource", "put", "frozen-idem", "v1", "--token", "7", "--scope", "s/", "--idempotency-key", "run-1"}, exitUnknown, "same --idempotency-key"},
		{[]string{"resource", "fence", "--token", "9", "--scope", "t/"}, exitUnknown, "outcome unknown"},
		{[]string{"resource", "get", "frozen"}, exitError, "no answer within --command-timeout 1.5s"},
	}
	var wg sync.WaitGroup
	codes, texts := make([]int, len(cases)), make([]string, len(cases))
	for i, tc := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], texts[i] = run(append(tc.args, "--url", res.url, "--command-timeout", "1.5s")...)
		}()
	}
	wg.Wait()
	for i, tc := range cases {
		assert.Equal(t, tc.wantCode, codes[i], "%v: %s", tc.args, texts[i])
		assert.Contains(t, texts[i], tc.wantText, tc.args)
	}

	// What exit 6 warns of: once the resource runs again, it applies them.
	require.NoError(t, res.cmd.Process.Signal(syscall.SIGCONT))
	stopped = false
	c := &fencing.Client{BaseURL: res.url}
	ctx := context.Background()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		for _, key := range []string{"frozen", "frozen-idem"} {
			e, err := c.Get(ctx, key)
			if assert.NoError(ct, err, key) {
				assert.Equal(ct, "v1", e.Value, key)
			}
		}
		floors, err := c.Floors(ctx)
		if assert.NoError(ct, err) {
			assert.EqualValues(ct, 9, floors.Floors["t/"])
		}
	}, 30*time.Second, 20*time.Millisecond, "the unanswered writes were applied once the resource ran again")

	// Nothing listens: the request never left, exit 1 (a retry is safe).
	deadURL := "http://" + nettest.ClosedAddr(t)
	code, text := run("resource", "put", "k", "v", "--token", "7", "--scope", "s/", "--url", deadURL)
	require.Equal(t, exitError, code, text)
	require.Contains(t, text, "resource unreachable at "+deadURL)
}
