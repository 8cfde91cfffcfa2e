package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

// Issue 34: 'coordctl sidecar resign --to best', the preStop hook of the
// shipped manifests, hands over to the candidate the policy prefers (the
// newest version), with nobody leading in between; on a standby it is
// nothing to do (exit 0); --to a candidate that is not queued exits 1.
func TestSidecarE2EResignToBestCommand(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	eps := srv.Endpoints()
	log := followLeaders(t, etcdtest.Client(t, srv), "e2e/resign-to")
	coord := func(version string) []string {
		return []string{"--policy", "newest-version", "--version", version, "--no-preempt"}
	}
	a := startSidecarProc(t, nil, eps, "e2e/resign-to", "a", coord("1.0.0")...)
	a.awaitLine(t, "elected", 30*time.Second)
	b := startSidecarProc(t, nil, eps, "e2e/resign-to", "b", coord("1.0.0")...)
	c := startSidecarProc(t, nil, eps, "e2e/resign-to", "c", coord("1.1.0")...)
	c.awaitQueued(t, 3)

	resign := func(p *sidecarProc, to string) (int, map[string]any) {
		t.Helper()
		code, out, _ := runBinary(t, nil, "-w", "json", "sidecar", "resign", "--url", p.url, "--to", to)
		var res map[string]any
		if code == 0 {
			require.NoError(t, json.Unmarshal([]byte(out), &res), out)
		}
		return code, res
	}
	code, res := resign(b, "best")
	require.Equal(t, 0, code, "a standby has nothing to hand over")
	require.Equal(t, false, res["resigned"])
	code, _ = resign(a, "nobody")
	require.Equal(t, exitError, code)
	require.Equal(t, 200, a.status(t, "/readyz"), "a failed handover keeps the leadership")

	code, res = resign(a, "best")
	require.Equal(t, 0, code)
	require.Equal(t, true, res["resigned"], "%v", res)
	c.awaitLine(t, "elected", 30*time.Second)
	require.Equal(t, []string{"a", "c"}, log.until(t, "c", 30*time.Second), "to the newest version, nobody in between")
	noLine(t, b, "elected")
}
