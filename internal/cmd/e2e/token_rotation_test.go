package e2e

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/httpguard/guardtest"
)

// getWithToken is GET url with "Authorization: Bearer token": its status.
func getWithToken(t *testing.T, url, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// An --api-token-file whose Secret is rotated: the agent requires the new
// token at once and still accepts the previous one for a while (clients
// read the same Secret a little later), and says so on stderr without the
// token; before, it kept the token it read at start until restarted, and
// refused every client that had moved on to the new one.
func TestAgentE2EFollowsARotatedTokenFile(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	vol := guardtest.NewSecretVolume(t, "first-token-0123456789")
	p := startCoordctl(t, lockEnv(srv.Endpoints()[0]), "agent", "--listen", "127.0.0.1:0", "--api-token-file", vol.Path(), "-w", "json")
	var ready struct {
		URL string `json:"url"`
	}
	require.NoError(t, json.Unmarshal([]byte(p.line(t)), &ready))
	url := ready.URL + "/v1/session"
	require.Equal(t, http.StatusOK, getWithToken(t, url, "first-token-0123456789"))
	require.Equal(t, http.StatusUnauthorized, getWithToken(t, url, "second-token-0123456789"))

	vol.Rotate(t, "second-token-0123456789")
	require.Equal(t, http.StatusOK, getWithToken(t, url, "second-token-0123456789"), "the rotated token")
	require.Equal(t, http.StatusOK, getWithToken(t, url, "first-token-0123456789"), "the previous one, within the grace")
	require.Equal(t, http.StatusUnauthorized, getWithToken(t, url, "third-token-0123456789"))
	require.Contains(t, p.stderr.String(), "holds a new token")
	require.NotContains(t, p.stderr.String(), "token-0123456789")
	require.Equal(t, 0, p.stop(t))
}

// The sidecar's preStop hook ('sidecar resign --api-token-file') reads the
// Secret as it is when the pod stops; after a rotation the sidecar refused
// it (401), so a leader being stopped did not hand over and its successor
// waited out the lease.
func TestSidecarE2EResignsWithARotatedToken(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	eps := srv.Endpoints()
	vol := guardtest.NewSecretVolume(t, "first-token-0123456789")
	a := startSidecarProc(t, nil, eps, "rotated", "a", "--api-token-file", vol.Path())
	a.awaitLine(t, "elected", 30*time.Second)
	b := startSidecarProc(t, nil, eps, "rotated", "b", "--api-token-file", vol.Path())
	b.awaitLine(t, "leader", 30*time.Second)

	vol.Rotate(t, "second-token-0123456789")
	out, err := exec.Command(coordctlBinary(t), "-w", "json", "sidecar", "resign", "--url", a.url, "--api-token-file", vol.Path()).CombinedOutput()
	require.NoError(t, err, "%s", out)
	var r struct {
		Resigned bool `json:"resigned"`
	}
	require.NoError(t, json.Unmarshal(out, &r), string(out))
	require.True(t, r.Resigned, string(out))
	a.awaitLine(t, "lost", 30*time.Second)
	b.awaitLine(t, "elected", 30*time.Second)
	a.awaitStderr(t, "holds a new token", 10*time.Second)
}
