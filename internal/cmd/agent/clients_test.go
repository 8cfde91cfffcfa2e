package agentcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/testbin"
)

// agentTTL is the agent's lease TTL in these tests: a crashed client's
// waiter must get the lock in well under it.
const agentTTL = 10 * time.Second

// coordctl is the built coordctl (internal/testbin).
func coordctl(t *testing.T) string {
	t.Helper()
	return testbin.Path(t, testbin.Coordctl)
}

// interpreter is the path of name, or a skip naming it; under CI=true a
// missing one fails (.ci/run installs it).
func interpreter(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found: .ci/run installs Debian's %s", name, pkg)
		}
		t.Skipf("%s not found: install Debian's %s to run the %s client's tests", name, pkg, name)
	}
	return p
}

// startAgent runs `coordctl agent` on a fresh embedded etcd and returns its
// URL and the environment the clients' tests read.
func startAgent(t *testing.T) (string, []string) {
	t.Helper()
	return startCoordctl(t, "agent", "--ttl", agentTTL.String())
}

// startCoordctl runs coordctl with args, --endpoints of a fresh embedded
// etcd, --listen 127.0.0.1:0 and -w json, and returns the URL of its
// "listening" line and the environment the clients' tests read. It stops
// it with SIGTERM, which must exit 0.
func startCoordctl(t *testing.T, args ...string) (string, []string) {
	t.Helper()
	return startCoordctlOn(t, "127.0.0.1:0", args...)
}

// startCoordctlOn is startCoordctl listening on listen.
func startCoordctlOn(t *testing.T, listen string, args ...string) (string, []string) {
	t.Helper()
	bin := coordctl(t)
	srv, cli := etcdtest.StartWithClient(t)
	revoke := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.URL.Query().Get("lease"), 16, 64)
		if err == nil {
			ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
			defer cancel()
			_, err = cli.Revoke(ctx, clientv3.LeaseID(id))
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	t.Cleanup(revoke.Close)

	cmd := exec.Command(bin, append(args, "--endpoints", strings.Join(srv.Endpoints(), ","), "--listen", listen, "-w", "json")...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			require.NoError(t, err, "coordctl %s did not exit 0 on SIGTERM", args[0])
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("coordctl %s did not exit within 30s of SIGTERM", args[0])
		}
	})
	sc := bufio.NewScanner(stdout)
	require.True(t, sc.Scan(), "coordctl %s printed nothing", args[0])
	var ready Listening
	require.NoError(t, json.Unmarshal(sc.Bytes(), &ready), sc.Text())
	require.Equal(t, "listening", ready.Event)
	go func() {
		for sc.Scan() {
		}
		exited <- cmd.Wait()
	}()
	env := append(os.Environ(),
		"COORDKIT_AGENT_URL="+ready.URL,
		fmt.Sprintf("COORDKIT_AGENT_TTL=%g", agentTTL.Seconds()),
		"COORDKIT_TEST_REVOKE_URL="+revoke.URL)
	return ready.URL, env
}

// runClientTests runs a client's own test suite against the agent.
func runClientTests(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	t.Logf("%s %s:\n%s", filepath.Base(name), strings.Join(args, " "), out)
	require.NoError(t, err, "the client's tests failed")
	require.NotContains(t, string(out), "skipped 'COORDKIT", "a test skipped for want of the harness's environment")
}

// The two clients' suites run side by side, each on an agent and an etcd
// of its own: both wait about a lease TTL for a silent agent.
func TestPythonClient(t *testing.T) {
	t.Parallel()
	py := interpreter(t, "python3", "python3")
	_, env := startAgent(t)
	runClientTests(t, "../../../clients/python", env, py, "-m", "unittest", "-v", "test_coordkit")
}

func TestNodeClient(t *testing.T) {
	t.Parallel()
	node := interpreter(t, "node", "nodejs")
	_, env := startAgent(t)
	runClientTests(t, "../../../clients/node", env, node, "--test", "coordkit.test.js")
}

// TestSidecarServesAPI: coordctl sidecar --api serves the coordination API
// beside its own routes, on its listener.
func TestSidecarServesAPI(t *testing.T) {
	url, _ := startCoordctl(t, "sidecar", "--election", "svc", "--id", "web-1", "--api")
	resp, err := http.Post(url+"/v1/lock", "application/json", strings.NewReader(`{"name":"jobs/x","timeout":30}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	require.True(t, sc.Scan())
	var ev struct {
		Event string `json:"event"`
		Scope string `json:"scope"`
		Token int64  `json:"token"`
	}
	require.NoError(t, json.Unmarshal(sc.Bytes(), &ev), sc.Text())
	require.Equal(t, "acquired", ev.Event, sc.Text())
	require.Equal(t, "jobs/x/", ev.Scope)
	require.NoError(t, resp.Body.Close())

	// The sidecar's own routes are still there.
	leader, err := http.Get(url + "/v1/leader")
	require.NoError(t, err)
	defer leader.Body.Close()
	var view struct {
		Name string `json:"name"`
	}
	require.NoError(t, json.NewDecoder(leader.Body).Decode(&view))
	require.Equal(t, "svc", view.Name)
}

// TestAgentUsage: flags the agent refuses before it dials anything (exit 2).
func TestAgentUsage(t *testing.T) {
	bin := coordctl(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"non-loopback without a token", []string{"--listen", "0.0.0.0:0"}, "needs --api-token-file"},
		{"short ttl", []string{"--ttl", "500ms"}, "invalid --ttl"},
		{"bad listen", []string{"--listen", "nonsense"}, "invalid --listen"},
		{"argument", []string{"extra"}, "unknown command"},
		{"empty token file", []string{"--api-token-file", os.DevNull}, "invalid --api-token-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(bin, append([]string{"agent", "--endpoints", "127.0.0.1:1"}, tc.args...)...).CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "%s", out)
			require.Equal(t, 2, ee.ExitCode(), "%s", out)
			require.Contains(t, string(out), tc.want)
		})
	}
}
