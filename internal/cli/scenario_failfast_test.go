package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/scenarios"
	"github.com/coordkit/coordkit/scenarios/report"
)

// A scenario that fails reports how long it ran, not "0s".
func TestScenarioCmdFailedRunReportsElapsed(t *testing.T) {
	t.Parallel()
	const work = 50 * time.Millisecond
	r := scenarios.NewRegistry()
	mustRegister(t, r, scenarios.Scenario{Name: "slowfail", Summary: "s", Claims: fakeClaims,
		Run: func(ctx context.Context, _ scenarios.Env) (*report.Report, error) {
			<-time.After(work) // the work before the failure
			return nil, os.ErrPermission
		}})
	var out, errOut bytes.Buffer
	f := newFactory(ioStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	f.Global.WriteOut = formatJSON
	err := runScenarioRun(context.Background(), f, &scenarioRunOptions{Name: "slowfail", Scale: "small", Registry: r})
	require.Equal(t, exitError, exitCode(err))
	var rep report.Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep), out.String())
	require.GreaterOrEqual(t, rep.Elapsed.D(), work)
	require.NotContains(t, errOut.String(), "FAIL in 0s")
}

// --endpoints that nothing answers fail within --dial-timeout, saying so.
func TestScenarioCmdUnreachableEndpointsUseDialTimeout(t *testing.T) {
	t.Parallel()
	dead := freeAddr(t)
	res := runInProcess(context.Background(), nil, "scenario", "run", "lock-without-fencing",
		"--endpoints", dead, "--dial-timeout", "300ms")
	require.Equal(t, exitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "etcd unreachable at "+dead)
	require.Contains(t, res.Stderr, "--dial-timeout 300ms")
	require.NotContains(t, res.Stderr, "in 0s")
}
