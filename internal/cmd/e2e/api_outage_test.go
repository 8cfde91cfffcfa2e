//go:build linux

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/nettest"
)

// startAgentBehindProxy runs `coordctl agent` (TTL 2s, --command-timeout
// 1s) on a fresh etcd behind a cut proxy, and returns it and its URL.
func startAgentBehindProxy(t *testing.T) (*proc, string, *cutProxy) {
	t.Helper()
	srv, _ := etcdtest.StartWithClient(t)
	px := startCutProxy(t, srv.Endpoints()[0])
	p := startCoordctl(t, lockEnv(px.endpoint), "agent", "--listen", "127.0.0.1:0", "--ttl", "2s",
		"--command-timeout", "1s", "-w", "json")
	var ready struct {
		URL string `json:"url"`
	}
	require.NoError(t, json.Unmarshal([]byte(p.line(t)), &ready))
	return p, ready.URL, px
}

// requireLive checks the agent's GET /livez as a kubelet's probe sends it
// (the pod's address as Host, no token): 200 {"status":"ok"}, where an API
// route asked the same way is refused.
func requireLive(t *testing.T, url string) {
	t.Helper()
	get := func(path string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, url+path, nil)
		require.NoError(t, err)
		req.Host = "10.1.2.3:4050"
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get("/livez")
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, `{"status":"ok"}`, body)
	code, body = get("/v1/session")
	require.Equal(t, http.StatusForbidden, code, body)
}

// postHold sends POST /v1/lock with body to the agent at url and returns
// its stream of events, line by line; the stream is closed at the end of
// the test (or when ctx ends).
func postHold(t *testing.T, ctx context.Context, url, body string) *bufio.Scanner {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/lock", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return bufio.NewScanner(resp.Body)
}

// agentSession is GET /v1/session of the agent at url, within timeout.
func agentSession(url string, timeout time.Duration) (alive bool, err error) {
	c := &http.Client{Timeout: timeout}
	resp, err := c.Get(url + "/v1/session")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var info struct {
		Alive bool `json:"alive"`
	}
	err = json.NewDecoder(resp.Body).Decode(&info)
	return info.Alive, err
}

// While etcd does not answer, GET /v1/session answers at once (alive
// false), even with holds waiting for the agent's lost session to be
// granted anew: that grant, and the revoke of the lost lease before it,
// wait for their timeouts, and the agent's status used to wait with them.
// A read of etcd answers 503 unavailable after the request timeout (it
// answered 408, the status of a client too slow to send its request).
func TestAgentE2EWhileEtcdDoesNotAnswer(t *testing.T) {
	t.Parallel()
	p, url, px := startAgentBehindProxy(t)
	alive, err := agentSession(url, 5*time.Second)
	require.NoError(t, err)
	require.True(t, alive)

	px.cut()
	require.Eventually(t, func() bool {
		alive, err := agentSession(url, 5*time.Second)
		return err == nil && !alive
	}, 20*time.Second, 20*time.Millisecond, "the agent's session never ended; stderr: %s", p.stderr.String())

	// Two holds on the first lane, whose session is lost: each must have it
	// granted anew. A hold's stream starts (200) before it takes a lane.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, name := range []string{"e2e/agent-outage-a", "e2e/agent-outage-b"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/lock", strings.NewReader(`{"name":"`+name+`"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	start := time.Now()
	alive, err = agentSession(url, 1500*time.Millisecond)
	require.NoError(t, err, "GET /v1/session waited for the holds' grants (%s)", time.Since(start))
	require.False(t, alive)

	resp, err := (&http.Client{Timeout: 20 * time.Second}).Get(url + "/v1/lock/status?name=e2e/agent-outage-a")
	require.NoError(t, err)
	defer resp.Body.Close()
	var refusal struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&refusal))
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, refusal.Error.Message)
	require.Equal(t, "unavailable", refusal.Error.Code)
	require.Contains(t, refusal.Error.Message, "etcd did not answer within the request timeout 1s")

	cancel()
	px.heal()
	require.Equal(t, exitOK, p.stop(t), p.stderr.String())
}

// While etcd does not answer, the sidecar's GET /v1/candidates answers 503
// after --command-timeout, saying etcd did not answer; it waited for the
// resignation's bound (kill grace + TTL + 5s: 20s with the defaults).
func TestSidecarE2ECandidatesWhileEtcdDoesNotAnswer(t *testing.T) {
	t.Parallel()
	srv, _ := etcdtest.StartWithClient(t)
	px := startCutProxy(t, srv.Endpoints()[0])
	p := startSidecarProc(t, nil, []string{px.endpoint}, "e2e/outage-candidates", "a", "--ttl", "2s", "--command-timeout", "1s")
	require.Equal(t, http.StatusOK, p.status(t, "/v1/candidates"))

	px.cut()
	c := &http.Client{Timeout: 20 * time.Second}
	start := time.Now()
	resp, err := c.Get(p.url + "/v1/candidates")
	require.NoError(t, err)
	defer resp.Body.Close()
	took := time.Since(start)
	var refusal struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&refusal))
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, refusal.Error)
	require.Contains(t, refusal.Error, "etcd did not answer within 1s")
	require.Less(t, took, 10*time.Second, "the read waited past --command-timeout 1s")
	px.heal()
}

// A hold the agent loses (here: etcd cut off past the lease's local
// deadline) is a note on the agent's stderr, naming the hold and why, as
// well as the "lost" line its client reads.
func TestAgentE2ELogsALostHold(t *testing.T) {
	t.Parallel()
	p, url, px := startAgentBehindProxy(t)
	events := postHold(t, context.Background(), url, `{"name":"e2e/agent-lost"}`)
	next := func() map[string]any {
		require.True(t, events.Scan(), "the stream ended; agent stderr: %s", p.stderr.String())
		var ev map[string]any
		require.NoError(t, json.Unmarshal(events.Bytes(), &ev))
		return ev
	}
	require.Equal(t, "acquired", next()["event"])

	px.cut()
	for ev := next(); ev["event"] != "lost"; ev = next() {
		require.Equal(t, "held", ev["event"])
	}
	require.Eventually(t, func() bool {
		return strings.Contains(p.stderr.String(), `level=WARN msg="hold lost" kind=lock name=e2e/agent-lost key=e2e/agent-lost/`)
	}, 10*time.Second, 10*time.Millisecond, "agent stderr: %s", p.stderr.String())
}

// An agent started while etcd was unreachable exited 1 (in a pod, a
// CrashLoopBackOff whose back-off brings it back minutes after etcd). It
// serves now, every route 503 "unavailable" while it retries (one stderr
// line per attempt), and says 'ready' with its lease once etcd answers on
// that address; a hold is granted then.
func TestAgentE2EWaitsForEtcdAtStart(t *testing.T) {
	t.Parallel()
	client, peer := "http://"+nettest.ClosedAddr(t), "http://"+nettest.ClosedAddr(t)
	p := startCoordctl(t, lockEnv(client), "agent", "--listen", "127.0.0.1:0", "--ttl", "2s", "--dial-timeout", "500ms", "-w", "json")
	p.awaitStderr(t, "coordctl agent: connecting to etcd: attempt 2 failed: etcd unreachable at ", 60*time.Second)
	out := p.stderr.String()
	require.Equal(t, 1, strings.Count(out, "attempt 1 failed"), "one line per attempt: %s", out)
	_, rest, ok := strings.Cut(out, "coordctl agent: serving ")
	require.True(t, ok, "the agent did not say where it serves: %s", out)
	url, _, _ := strings.Cut(rest, ",")
	requireLive(t, url)
	for _, path := range []string{"/v1/session", "/v1/lock/status?name=e2e/agent-start"} {
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url + path)
		require.NoError(t, err)
		var refusal struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&refusal))
		resp.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, path)
		require.Equal(t, "unavailable", refusal.Error.Code, path)
		require.Contains(t, refusal.Error.Message, "connecting to etcd", path)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := etcdembed.Start(ctx, etcdembed.Config{DataDir: t.TempDir(), ClientURL: client, PeerURL: peer, UnsafeNoFsync: true})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	up := time.Now()
	var ready struct{ Event, URL, Lease string }
	require.NoError(t, json.Unmarshal([]byte(p.line(t)), &ready))
	// Logged for docs/operations.md: bounded by one backoff wait (at most
	// 5s) and one dial, not asserted (a loaded machine).
	t.Logf("ready %s after etcd was up (%d attempts failed before)", time.Since(up).Round(time.Millisecond),
		strings.Count(p.stderr.String(), " failed: "))
	require.Equal(t, "listening", ready.Event)
	require.Equal(t, url, ready.URL)
	require.NotEmpty(t, ready.Lease)

	events := postHold(t, ctx, url, `{"name":"e2e/agent-start","try":true}`)
	require.True(t, events.Scan(), "the stream ended; agent stderr: %s", p.stderr.String())
	var ev struct{ Event, Lease string }
	require.NoError(t, json.Unmarshal(events.Bytes(), &ev))
	require.Equal(t, "acquired", ev.Event, events.Text())
	require.Equal(t, ready.Lease, ev.Lease, "on the session 'ready' named")
	requireLive(t, url)
	require.Equal(t, exitOK, p.stop(t), p.stderr.String())
}

// --start-timeout bounds the agent's wait: exit 1 naming the flag and the
// last attempt's error; an etcd that answers and refuses (another
// cluster, TLS, credentials) ends it at once, without waiting; SIGTERM
// while it waits ends it with 0.
func TestAgentE2EStartTimeout(t *testing.T) {
	t.Parallel()
	dead := nettest.ClosedAddr(t)
	start := time.Now()
	p := startCoordctl(t, lockEnv(dead), "agent", "--listen", "127.0.0.1:0", "--dial-timeout", "500ms", "--start-timeout", "2s")
	require.Equal(t, exitError, p.wait(t, 30*time.Second))
	require.GreaterOrEqual(t, time.Since(start), 2*time.Second)
	out := p.stderr.String()
	require.Contains(t, out, "coordctl agent: connecting to etcd: attempt 1 failed: etcd unreachable at "+dead)
	require.Contains(t, out, "--start-timeout 2s: etcd not reached within the start timeout (2s, ")

	// TLS to an etcd that speaks plain text (--cacert): no retry mends it.
	srv := etcdtest.Start(t)
	p = startCoordctl(t, lockEnv(strings.TrimPrefix(srv.Endpoints()[0], "http://")), "agent", "--listen", "127.0.0.1:0", "--dial-timeout", "2s",
		"--cacert", etcdtest.NewCA(t, t.TempDir(), "agent-e2e").File)
	require.Equal(t, exitError, p.wait(t, 30*time.Second), p.stderr.String())
	require.Contains(t, p.stderr.String(), "does not speak TLS")
	require.NotContains(t, p.stderr.String(), "attempt 1 failed")

	// SIGTERM while it waits: exit 0 at once, as once connected.
	p = startCoordctl(t, lockEnv(dead), "agent", "--listen", "127.0.0.1:0", "--dial-timeout", "500ms")
	p.awaitStderr(t, "attempt 1 failed", 30*time.Second)
	start = time.Now()
	require.Equal(t, exitOK, p.stop(t), p.stderr.String())
	require.Less(t, time.Since(start), 5*time.Second, "the stop waited")
}

// awaitStderr waits until the process's stderr holds s, failing at once
// if the process exits first.
func (p *proc) awaitStderr(t *testing.T, s string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for !strings.Contains(p.stderr.String(), s) {
		select {
		case <-p.done:
			t.Fatalf("coordctl exited (%d) before writing %q; stderr: %s", p.code, s, p.stderr.String())
		case <-deadline:
			t.Fatalf("no %q on stderr within %s: %s", s, d, p.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
