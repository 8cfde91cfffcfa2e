package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

func TestClaimEndToEndBinary(t *testing.T) {
	t.Parallel()
	bin := coordctlBinary(t)
	srv := etcdtest.Start(t)
	ctx := testCtx(t)
	coordctl := func(args ...string) (string, int) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(cmd.Environ(), "COORDCTL_ENDPOINTS="+srv.Endpoints()[0])
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			return string(out), ee.ExitCode()
		}
		return string(out), 0
	}
	out, code := coordctl("claim", "nick", "--owner", "a", "-w", "json")
	require.Equal(t, 0, code, out)
	var won claimJSON
	require.NoError(t, json.Unmarshal([]byte(out), &won))

	out, code = coordctl("claim", "nick", "--owner", "b", "-w", "json")
	require.Equal(t, exitNotAcquired, code)
	var lost claimJSON
	require.NoError(t, json.Unmarshal([]byte(out), &lost))
	require.Equal(t, "a", lost.Owner)
	require.Equal(t, won.Revision, lost.Revision)

	out, code = coordctl("claim", "release", "nick", "--owner", "a")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `released "nick"`)
	_, code = coordctl("claim", "get", "nick")
	require.Equal(t, exitNotAcquired, code)

	out, code = coordctl("lamport", "trace")
	require.Equal(t, 0, code)
	require.Contains(t, out, "(1,A) < (1,B) < (2,A) < (3,B)")
}

// coordctl claim ... | true (and every one-request command: claim get,
// the status commands, sem set-limit and delete): the claim was made, so the
// exit must say so — not death by SIGPIPE (141 in a shell), which a caller
// would read as a failure.
func TestClaimE2EClosedStdoutKeepsTheExitOfTheOutcome(t *testing.T) {
	t.Parallel()
	bin := coordctlBinary(t)
	srv := etcdtest.Start(t)
	ctx := testCtx(t)
	run := func(closedStdout bool, args ...string) (string, int) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(cmd.Environ(), "COORDCTL_ENDPOINTS="+srv.Endpoints()[0])
		var stderr strings.Builder
		cmd.Stderr = &stderr
		var out strings.Builder
		if closedStdout {
			r, w, err := os.Pipe()
			require.NoError(t, err)
			require.NoError(t, r.Close()) // nobody reads: the first write gets EPIPE/SIGPIPE
			defer w.Close()
			cmd.Stdout = w
		} else {
			cmd.Stdout = &out
		}
		err := cmd.Run()
		if err != nil {
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, stderr.String())
			require.True(t, ee.Exited(), "killed by a signal: %v; stderr: %s", ee, stderr.String())
			return out.String(), ee.ExitCode()
		}
		return out.String(), 0
	}

	_, code := run(true, "claim", "piped", "--owner", "a")
	require.Equal(t, 0, code)
	out, code := run(false, "claim", "get", "piped")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "a")
	_, code = run(true, "claim", "get", "piped")
	require.Equal(t, 0, code)
	_, code = run(true, "claim", "piped", "--owner", "b")
	require.Equal(t, exitNotAcquired, code, "not yours: exit 3 even with stdout closed")
	_, code = run(true, "claim", "release", "piped", "--owner", "a")
	require.Equal(t, 0, code)
	_, code = run(false, "claim", "get", "piped")
	require.Equal(t, exitNotAcquired, code, "released")

	_, code = run(true, "sem", "set-limit", "pipedsem", "3")
	require.Equal(t, 0, code)
	_, code = run(true, "sem", "status", "pipedsem")
	require.Equal(t, exitNotAcquired, code, "nobody holds a slot: exit 3, not SIGPIPE")
	_, code = run(true, "sem", "delete", "pipedsem")
	require.Equal(t, 0, code)
}
