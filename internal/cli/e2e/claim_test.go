package e2e

import (
	"encoding/json"
	"os/exec"
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
