package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

// 'sidecar resign' (the preStop hook) sends what the guard wants; a
// request without the token, or a cross-site one, does not resign.
func TestSidecarResignCommandAndGuard(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	eps := srv.Endpoints()
	tokFile := filepath.Join(t.TempDir(), "api-token")
	require.NoError(t, os.WriteFile(tokFile, []byte("0123456789abcdef-token\n"), 0o600))
	a := startSidecarProc(t, nil, eps, "guarded", "a", "--api-token-file", tokFile)
	a.awaitLine(t, "elected", 30*time.Second)
	b := startSidecarProc(t, nil, eps, "guarded", "b", "--api-token-file", tokFile)
	b.awaitLine(t, "leader", 30*time.Second)

	// What a web page could send: refused, still leading.
	req, err := http.NewRequest(http.MethodPost, a.url+"/v1/resign", strings.NewReader("x"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "text/plain")
	req.Host = "evil.example"
	resp, err := a.http.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, http.StatusOK, a.status(t, "/readyz"), "still the leader")

	bin := coordctlBinary(t)
	out, err := exec.Command(bin, "sidecar", "resign", "--url", a.url).CombinedOutput()
	require.Error(t, err, "no token: %s", out)
	require.Contains(t, string(out), "missing or wrong token")

	// The standby: nothing to do, exit 0.
	out, err = exec.Command(bin, "-w", "json", "sidecar", "resign", "--url", b.url, "--api-token-file", tokFile).Output()
	require.NoError(t, err, "%s", out)
	var r struct {
		Resigned bool   `json:"resigned"`
		Reason   string `json:"reason"`
	}
	require.NoError(t, json.Unmarshal(out, &r), string(out))
	require.False(t, r.Resigned)
	require.Contains(t, r.Reason, "not the leader")

	cmd := exec.Command(bin, "-w", "json", "sidecar", "resign", "--api-token-file", tokFile)
	cmd.Env = append(os.Environ(), "COORDCTL_SIDECAR_URL="+a.url)
	out, err = cmd.Output()
	require.NoError(t, err, "%s", out)
	require.NoError(t, json.Unmarshal(out, &r), string(out))
	require.True(t, r.Resigned, string(out))
	lost := a.awaitLine(t, "lost", 30*time.Second)
	require.Equal(t, "resigned: requested by POST /v1/resign", lost["reason"])
	b.awaitLine(t, "elected", 30*time.Second)

	// /v1/status is open and names the build.
	resp, err = b.http.Get(b.url + "/v1/status")
	require.NoError(t, err)
	var st struct {
		Ready bool `json:"ready"`
		Build struct {
			Module     string `json:"module"`
			EtcdServer string `json:"etcd_server"`
		} `json:"build"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	resp.Body.Close()
	require.True(t, st.Ready)
	require.Equal(t, "github.com/coordkit/coordkit", st.Build.Module)
	require.NotEmpty(t, st.Build.EtcdServer)
}
