package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/sidecar"
)

// Issue 32: during an etcd outage a standby's /v1/leader kept naming the
// old leader and token (7s, --ttl 3s). Once etcd has not answered it for
// longer than the leader's TTL it names no leader, and is not ready; when
// etcd answers again it names the leader again.
func TestSidecarE2EStandbyCutOffNamesNoLeader(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	leader := startSidecarProc(t, nil, srv.Endpoints(), "e2e/outage", "a", "--ttl", "2s")
	require.Eventually(t, func() bool { return leader.status(t, "/readyz") == 200 }, 30*time.Second, 20*time.Millisecond)
	px := startCutProxy(t, srv.Endpoints()[0])
	standby := startSidecarProc(t, nil, []string{px.endpoint}, "e2e/outage", "b", "--ttl", "2s")
	require.Eventually(t, func() bool { v := standby.leader(t); return v.Leader != nil && *v.Leader == "a" }, 30*time.Second, 20*time.Millisecond)

	px.cut()
	cut := time.Now()
	require.Eventually(t, func() bool { return standby.leader(t).Leader == nil }, 20*time.Second, 20*time.Millisecond,
		"a standby cut off from etcd for longer than the leader's TTL must not name it")
	require.Less(t, time.Since(cut), 2*time.Second+2*time.Second, "at the TTL after etcd's last answer, not after a request's timeout")
	require.Equal(t, 503, standby.status(t, "/readyz"))
	require.Equal(t, 200, leader.status(t, "/readyz"), "the leader itself reaches etcd and still leads")

	px.heal()
	require.Eventually(t, func() bool { v := standby.leader(t); return v.Leader != nil && *v.Leader == "a" }, 30*time.Second, 20*time.Millisecond)
}

// Issue 32: a `kill -STOP` of the leading sidecar alone (TTL 2s, frozen
// 4s) let its command run 1,922 ms beside the next leader's. Its command
// is below the watchdog now: no "A" after the first "B".
func TestSidecarE2EFrozenLeaderCommandDiesBeforeTheNext(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	log := filepath.Join(t.TempDir(), "log")
	env := []string{"LOG=" + log}
	a := startSidecarProc(t, env, srv.Endpoints(), "e2e/frozen", "a", "--ttl", "2s", "--",
		"sh", "-c", `while :; do echo A >> "$LOG"; sleep 0.01; done`)
	require.Eventually(t, func() bool { return strings.Count(readLog(t, log), "A") >= 3 }, 30*time.Second, 10*time.Millisecond)
	b := startSidecarProc(t, env, srv.Endpoints(), "e2e/frozen", "b", "--ttl", "2s", "--",
		"sh", "-c", `while :; do echo B >> "$LOG"; sleep 0.01; done`)
	a.signal(t, syscall.SIGSTOP)
	require.Eventually(t, func() bool { return strings.Contains(readLog(t, log), "B") }, 30*time.Second, 10*time.Millisecond,
		"b must lead once a's lease expired")
	a.signal(t, syscall.SIGCONT)
	b.signal(t, syscall.SIGTERM)
	b.wait(t, 30*time.Second)
	// a campaigns again once thawed and leads again after b resigned: its
	// second tenure's lines come after b's last.
	lines := strings.Fields(readLog(t, log))
	firstB, lastB := indexOf(lines, "B"), len(lines)-1-indexOf(reversed(lines), "B")
	require.NotContains(t, lines[firstB:lastB+1], "A", "a's command wrote while b led")
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// Issue 32: a second sidecar given the same --token-file deleted the
// leader's live token file at start-up. The file is owned now: the second
// exits 1 naming the owner's lock, and the leader's token stays.
func TestSidecarE2ETokenFileIsOwned(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	file := filepath.Join(t.TempDir(), "token")
	leader := startSidecarProc(t, nil, srv.Endpoints(), "e2e/owned", "a", "--token-file", file)
	require.Eventually(t, func() bool { return readLog(t, file) != "" }, 30*time.Second, 10*time.Millisecond)
	tok := readLog(t, file)

	code, out, _ := runBinary(t, nil, "--endpoints", srv.Endpoints()[0], "sidecar", "--election", "e2e/owned", "--id", "b",
		"--listen", "127.0.0.1:0", "--token-file", file)
	require.Equal(t, exitError, code, out)
	require.Contains(t, out, "owned by another running sidecar")
	require.Equal(t, tok, readLog(t, file), "the leader's token file is untouched")

	leader.signal(t, syscall.SIGKILL)
	leader.wait(t, 20*time.Second)
	// The kernel dropped the dead owner's lock: a new sidecar may take the file.
	next := startSidecarProc(t, nil, srv.Endpoints(), "e2e/owned", "c", "--token-file", file)
	next.signal(t, syscall.SIGTERM)
	next.wait(t, 30*time.Second)
}

// healthSwitch is an application's health endpoint a test turns on and off.
type healthSwitch struct {
	url string
	ok  atomic.Bool
}

func startHealth(t *testing.T, ok bool) *healthSwitch {
	t.Helper()
	h := &healthSwitch{}
	h.ok.Store(ok)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !h.ok.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/healthz"
	return h
}

// application is GET /v1/status's application health.
func (p *sidecarProc) application(t *testing.T) sidecar.AppStatus {
	t.Helper()
	code, body := p.getBody(t, "/v1/status")
	require.Equal(t, 200, code, body)
	var st sidecar.Status
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	require.NotNil(t, st.Application, "no application in /v1/status: %s", body)
	return *st.Application
}

// Issue 32: a sidecar whose application had exited or hung stayed leader
// and ready. With --health-url an unhealthy application's sidecar resigns
// (a standby takes over), does not campaign while unhealthy (nor before
// its first healthy answer), and campaigns again once healthy.
func TestSidecarE2ELeadershipFollowsTheApplicationsHealth(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	appA, appB := startHealth(t, false), startHealth(t, true)
	health := func(h *healthSwitch) []string {
		return []string{"--ttl", "2s", "--health-url", h.url, "--health-interval", "100ms", "--health-failures", "2"}
	}
	a := startSidecarProc(t, nil, srv.Endpoints(), "e2e/health", "a", health(appA)...)
	time.Sleep(500 * time.Millisecond) // a's unhealthy app had five checks to let it campaign: it must not
	require.Nil(t, a.leader(t).Leader, "an instance whose application is not up does not lead")
	// Why it does not lead is in its log and in /v1/status.
	a.awaitStderr(t, `level=WARN msg="application unhealthy: not leading until it answers 2xx" url=`+appA.url, 10*time.Second)
	app := a.application(t)
	require.False(t, app.Healthy)
	require.Equal(t, appA.url, app.URL)
	require.Contains(t, app.Reason, "503 Service Unavailable")

	appA.ok.Store(true)
	require.Eventually(t, func() bool { return a.status(t, "/readyz") == 200 }, 20*time.Second, 20*time.Millisecond)
	b := startSidecarProc(t, nil, srv.Endpoints(), "e2e/health", "b", health(appB)...)
	require.Eventually(t, func() bool { v := b.leader(t); return v.Leader != nil && *v.Leader == "a" }, 20*time.Second, 20*time.Millisecond)

	require.True(t, a.application(t).Healthy)
	require.Contains(t, a.stderr.String(), `level=INFO msg="application healthy"`)

	appA.ok.Store(false)
	require.Eventually(t, func() bool { return b.status(t, "/readyz") == 200 }, 20*time.Second, 20*time.Millisecond,
		"a resigns when its application is unhealthy; b takes over")
	require.Equal(t, 503, a.status(t, "/readyz"))
	a.awaitStderr(t, `level=WARN msg=resigning reason="application unhealthy: GET `+appA.url+`: 503 Service Unavailable`, 10*time.Second)
	// The event says why too (it said "resigned", whatever the cause). On
	// a loaded machine a probe may also have timed out before: every
	// resignation says its own cause, until the one of the 503.
	for {
		reason, _ := a.awaitLine(t, "lost", 10*time.Second)["reason"].(string)
		require.True(t, strings.HasPrefix(reason, "resigned: application unhealthy: "), reason)
		if strings.Contains(reason, "GET "+appA.url+": 503 Service Unavailable") {
			break
		}
	}

	appB.ok.Store(false)
	require.Eventually(t, func() bool { return b.leader(t).Leader == nil }, 20*time.Second, 20*time.Millisecond,
		"b resigns too, and a stays out while unhealthy")

	appA.ok.Store(true)
	require.Eventually(t, func() bool { return a.status(t, "/readyz") == 200 }, 20*time.Second, 20*time.Millisecond,
		"a campaigns again once healthy")
}
