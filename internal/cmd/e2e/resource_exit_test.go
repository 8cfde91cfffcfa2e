package e2e

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
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
				var stderr syncBuffer
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
