package root

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/nettest"
)

// (TestScenarioCmdFailedRunReportsElapsed moved to scenarios: TestRunAll
// asserts that a run that could not be carried out reports how long it ran.)

// --endpoints that nothing answers fail within --dial-timeout, saying so.
func TestScenarioCmdUnreachableEndpointsUseDialTimeout(t *testing.T) {
	t.Parallel()
	dead := nettest.ClosedAddr(t)
	res := runInProcess(context.Background(), nil, "scenario", "run", "lock-without-fencing",
		"--endpoints", dead, "--dial-timeout", "300ms")
	require.Equal(t, cmdutil.ExitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "etcd unreachable at "+dead)
	require.Contains(t, res.Stderr, "--dial-timeout 300ms")
	require.NotContains(t, res.Stderr, "in 0s")
}
