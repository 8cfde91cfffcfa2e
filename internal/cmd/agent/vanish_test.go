package agentcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/nettest"
)

// TestAgentReleasesAVanishedClient: a client whose machine dies, or whose
// network is cut, sends no FIN, and the agent's "held" lines go
// unacknowledged. Its hold ends about the agent's --ttl after that, as a
// process's lease would, not when TCP gives up retransmitting (about 15
// minutes; the next holder waited out its whole 30 s timeout before). The
// same for the API a sidecar serves with --api, on the sidecar's --ttl.
func TestAgentReleasesAVanishedClient(t *testing.T) {
	// Beside the other tests, but its cases one after another: each starts
	// an etcd, a coordctl and a network namespace of its own.
	t.Parallel()
	const ttl = 2 * time.Second
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"agent", []string{"agent", "--ttl", ttl.String()}},
		{"sidecar --api", []string{"sidecar", "--election", "svc", "--id", "web-1", "--api", "--ttl", ttl.String()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vanishedClientReleases(t, ttl, tc.args...)
		})
	}
}

// startOnHost starts name with args on host and returns a scanner of its
// standard output; it is killed when the test ends.
func startOnHost(ctx context.Context, t *testing.T, host *nettest.Host, name string, args ...string) *bufio.Scanner {
	t.Helper()
	cmd := host.Command(ctx, name, args...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return bufio.NewScanner(out)
}

func vanishedClientReleases(t *testing.T, ttl time.Duration, args ...string) {
	curl := interpreter(t, "curl", "curl")
	host := nettest.NewHost(t)
	tokenFile := filepath.Join(t.TempDir(), "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	url, _ := startCoordctlOn(t, net.JoinHostPort(host.LocalAddr, "0"), append(args, "--api-token-file", tokenFile)...)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sc := startOnHost(ctx, t, host, curl, "-sN", "-H", "Authorization: Bearer s3cret", "-H", "Content-Type: application/json",
		"-d", `{"name":"jobs/vanish","timeout":20}`, url+"/v1/lock")
	require.True(t, sc.Scan(), "the holder on the other host read nothing")
	require.Contains(t, sc.Text(), `"event":"acquired"`)

	host.Cut()
	cut := time.Now()
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/lock", strings.NewReader(`{"name":"jobs/vanish","timeout":30}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer s3cret")
	req.Header.Set("Content-Type", "application/json")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	next := bufio.NewScanner(resp.Body)
	var ev struct{ Event, Code, Message string }
	for ev.Event == "" || ev.Event == "waiting" {
		require.True(t, next.Scan(), "the next holder's stream ended: %v", next.Err())
		require.NoError(t, json.Unmarshal(next.Bytes(), &ev), next.Text())
	}
	require.Equal(t, "acquired", ev.Event, "%s", next.Text())
	took := time.Since(cut)
	t.Logf("the next holder acquired %s after the first one's host was cut off (--ttl %s)", took.Round(time.Millisecond), ttl)
	require.Less(t, took, 15*time.Second, "the vanished client's hold outlived the TTL by far")
}

// The clients' side: a hold that waits on an agent whose host is gone gets
// no answer, ever, not even a refusal. It ends at the request's timeout
// and connect_timeout more (both clients: about 3 s here), or, without a
// timeout, once TCP keepalive finds the agent's host gone (Python: about
// 11 s). Before, Python waited forever either way, and Node until its
// HTTP agent's keepalive found the host gone (about 11 s in Node 20),
// whatever the timeout said.
const waitOnVanishedPy = `
import sys, threading, time
sys.path.insert(0, sys.argv[1])
import coordkit
url, token, name, timeout = sys.argv[2:6]
c = coordkit.Client(url, token=token, connect_timeout=2)
first = c.lock(name).acquire()
second = c.lock(name, timeout=None if timeout == "none" else float(timeout))
def queued():
    while not c.lock_status(name)["waiters"]:
        time.sleep(0.01)
    print("waiting", flush=True)
threading.Thread(target=queued, daemon=True).start()
try:
    second.acquire()
    print("acquired", flush=True)
except coordkit.CoordError as e:
    print("error", e.code, e.message, flush=True)
`

const waitOnVanishedJS = `
const [lib, url, token, name, timeout] = process.argv.slice(1);
const { Client } = require(lib);
(async () => {
  const c = new Client(url, { token, connectTimeout: 2 });
  await c.lock(name);
  const second = c.lock(name, timeout === 'none' ? {} : { timeout: Number(timeout) });
  while (!(await c.lockStatus(name)).waiters.length) await new Promise((r) => setTimeout(r, 10));
  console.log('waiting');
  try {
    await second;
    console.log('acquired');
  } catch (e) {
    console.log('error', e.code, e.message);
  }
  process.exit(0);
})();
`

func TestClientsGiveUpOnAVanishedAgent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, client, timeout string
		within                time.Duration // after the cut; before, never
	}{
		{"python timeout 1", "python", "1", 8 * time.Second},
		{"python no timeout", "python", "none", 30 * time.Second},
		{"node timeout 1", "node", "1", 8 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var argv []string
			switch tc.client {
			case "python":
				dir, err := filepath.Abs("../../../clients/python")
				require.NoError(t, err)
				argv = []string{interpreter(t, "python3", "python3"), "-c", waitOnVanishedPy, dir}
			case "node":
				lib, err := filepath.Abs("../../../clients/node/coordkit.js")
				require.NoError(t, err)
				argv = []string{interpreter(t, "node", "nodejs"), "-e", waitOnVanishedJS, lib}
			}
			host := nettest.NewHost(t)
			tokenFile := filepath.Join(t.TempDir(), "api-token")
			require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
			url, _ := startCoordctlOn(t, net.JoinHostPort(host.LocalAddr, "0"), "agent", "--ttl", "3s", "--api-token-file", tokenFile)

			ctx, cancel := context.WithTimeout(context.Background(), tc.within+30*time.Second)
			defer cancel()
			sc := startOnHost(ctx, t, host, argv[0], append(argv[1:], url, "s3cret", "jobs/agent-gone", tc.timeout)...)
			require.True(t, sc.Scan(), "the client printed nothing")
			require.Equal(t, "waiting", sc.Text())

			host.Cut()
			cut := time.Now()
			require.True(t, sc.Scan(), "the client's wait never ended (%s after the cut)", time.Since(cut).Round(time.Second))
			took := time.Since(cut)
			t.Logf("%s: %q %s after the agent's host was cut off", tc.name, sc.Text(), took.Round(time.Millisecond))
			require.True(t, strings.HasPrefix(sc.Text(), "error unavailable "), sc.Text())
			require.Less(t, took, tc.within)
		})
	}
}
