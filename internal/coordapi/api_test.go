package coordapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/httpguard"
	"github.com/coordkit/coordkit/internal/testio"
	"github.com/coordkit/coordkit/session"
)

// wait bounds every wait for an event: generous, for a loaded machine.
const wait = 20 * time.Second

type agent struct {
	api *API
	srv *httptest.Server
	cli *clientv3.Client
}

func startAgent(t *testing.T, mod func(*Config)) *agent {
	t.Helper()
	_, cli := etcd.StartWithClient(t)
	cfg := Config{Client: cli, SessionOptions: []session.Option{session.WithTTL(5 * time.Second)}, HeldInterval: 100 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	api, err := New(etcdtest.Ctx(t, wait), cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(api)
	t.Cleanup(func() {
		require.NoError(t, api.Close())
		srv.Close()
	})
	return &agent{api: api, srv: srv, cli: cli}
}

// hold is one open hold request: its events as they arrive.
type hold struct {
	events chan Event
	cancel context.CancelFunc
	done   chan struct{} // closed when the stream ended
}

func (a *agent) open(t *testing.T, path string, body any) *hold {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.srv.URL+path, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.srv.Client().Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	h := &hold{events: make(chan Event, 100), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var ev Event
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				ev = Event{Event: "unparsable", Message: sc.Text()}
			}
			h.events <- ev
		}
	}()
	t.Cleanup(func() { cancel(); <-h.done })
	return h
}

// next is the next event other than "held".
func (h *hold) next(t *testing.T, what string) Event {
	t.Helper()
	for {
		select {
		case ev := <-h.events:
			if ev.Event != "held" {
				return ev
			}
		case <-h.done:
			select {
			case ev := <-h.events:
				if ev.Event != "held" {
					return ev
				}
				continue
			default:
			}
			t.Fatalf("stream ended waiting for %s", what)
		case <-time.After(wait):
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (h *hold) want(t *testing.T, event string) Event {
	t.Helper()
	ev := h.next(t, event)
	require.Equal(t, event, ev.Event, "%+v", ev)
	return ev
}

// acquired is the "acquired" event after any "waiting".
func (h *hold) acquired(t *testing.T) Event { return h.after(t, "acquired") }

// after is the event named event, after any "waiting".
func (h *hold) after(t *testing.T, event string) Event {
	t.Helper()
	ev := h.next(t, event)
	for ev.Event == "waiting" {
		ev = h.next(t, event)
	}
	require.Equal(t, event, ev.Event, "%+v", ev)
	return ev
}

// ended waits for the stream to end after its last event.
func (h *hold) ended(t *testing.T) {
	t.Helper()
	etcdtest.Recv(t, h.done, "the end of the stream", wait)
	for ev := range drain(h.events) {
		require.Equal(t, "held", ev.Event, "an event after the last: %+v", ev)
	}
}

func drain(ch chan Event) chan Event {
	out := make(chan Event, len(ch))
	for len(ch) > 0 {
		out <- <-ch
	}
	close(out)
	return out
}

func (a *agent) get(t *testing.T, path string, v any) int {
	t.Helper()
	resp, err := a.srv.Client().Get(a.srv.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
	return resp.StatusCode
}

func TestLockAcquireHandoff(t *testing.T) {
	a := startAgent(t, nil)
	first := a.open(t, "/v1/lock", HoldRequest{Name: "jobs/nightly"})
	ev := first.want(t, "acquired")
	require.Positive(t, ev.Token)
	require.Equal(t, "jobs/nightly/", ev.Scope)
	require.True(t, strings.HasPrefix(ev.Key, "jobs/nightly/"), ev.Key)
	require.Equal(t, "lock", ev.Kind)
	require.Equal(t, "exclusive", ev.Mode)
	require.NotNil(t, ev.LeaseDeadline)
	require.True(t, ev.LeaseDeadline.After(time.Now()), "deadline %s is past", ev.LeaseDeadline)
	// The same deadline as time left, for a client whose clock is not ours.
	require.NotNil(t, ev.LeaseRemainingSeconds)
	require.InDelta(t, time.Until(*ev.LeaseDeadline).Seconds(), *ev.LeaseRemainingSeconds, 1.0)
	require.Positive(t, *ev.LeaseRemainingSeconds)
	held := first.events
	h := etcdtest.Recv(t, held, "a held line", wait)
	require.NotNil(t, h.LeaseRemainingSeconds, "held lines count down too")

	second := a.open(t, "/v1/lock", HoldRequest{Name: "jobs/nightly"})
	w := second.want(t, "waiting")
	require.Equal(t, ev.Key, w.HolderKey)
	require.Equal(t, ev.Token, w.HolderToken)

	var st struct {
		Held    bool `json:"held"`
		Holders []struct {
			Token int64 `json:"token"`
		} `json:"holders"`
		Waiters []json.RawMessage `json:"waiters"`
	}
	require.Equal(t, http.StatusOK, a.get(t, "/v1/lock/status?name=jobs/nightly", &st))
	require.True(t, st.Held)
	require.Equal(t, int64(ev.Token), st.Holders[0].Token)
	require.Len(t, st.Waiters, 1)

	closed := time.Now()
	first.cancel() // the client goes away: the lock is released at once
	ev2 := second.want(t, "acquired")
	handoff := time.Since(closed)
	t.Logf("handoff after the holder's connection closed: %s", handoff)
	// The bound that cannot depend on load (DESIGN.md, Testing): the next
	// holder did not wait for the lease to expire. The number is logged;
	// it is about one commit (docs/api.md quotes it).
	require.Less(t, handoff, 5*time.Second, "the next holder waited for the TTL: the key was not deleted on close")
	require.Greater(t, ev2.Token, ev.Token)
	require.Equal(t, 2, a.api.lanes.count(), "the second hold of one name took a second lane")
}

func TestLockTryAndTimeout(t *testing.T) {
	a := startAgent(t, nil)
	first := a.open(t, "/v1/lock", HoldRequest{Name: "x"})
	first.want(t, "acquired")

	busy := a.open(t, "/v1/lock", HoldRequest{Name: "x", Try: true})
	ev := busy.want(t, "error")
	require.Equal(t, CodeBusy, ev.Code, ev.Message)
	busy.ended(t)

	zero := 0.2
	late := a.open(t, "/v1/lock", HoldRequest{Name: "x", Timeout: &zero})
	ev = late.after(t, "error") // "waiting" first, unless the timeout came before the library's first look
	require.Equal(t, CodeTimeout, ev.Code, ev.Message)
	require.Equal(t, `lock "x" not acquired within 200ms: context deadline exceeded`, ev.Message)
	late.ended(t)

	sem := a.open(t, "/v1/semaphore", HoldRequest{Name: "s", Limit: 1})
	sem.want(t, "acquired")
	full := a.open(t, "/v1/semaphore", HoldRequest{Name: "s", Limit: 1, Timeout: &zero})
	ev = full.after(t, "error")
	require.Equal(t, CodeTimeout, ev.Code, ev.Message)
	require.Equal(t, `semaphore "s": no slot acquired within 200ms: context deadline exceeded`, ev.Message)
	full.ended(t)

	free := a.open(t, "/v1/lock", HoldRequest{Name: "y", Try: true})
	free.want(t, "acquired")
}

func TestLostWhenLeaseRevoked(t *testing.T) {
	a := startAgent(t, nil)
	h := a.open(t, "/v1/lock", HoldRequest{Name: "x"})
	ev := h.want(t, "acquired")
	_, err := a.cli.Revoke(etcdtest.Ctx(t, wait), a.api.Lease())
	require.NoError(t, err)
	lost := h.want(t, "lost")
	require.Equal(t, ev.Token, lost.Token)
	require.Contains(t, lost.Reason, "lost")
	h.ended(t)

	// The agent renews its session: the next hold works.
	again := a.open(t, "/v1/lock", HoldRequest{Name: "x"})
	ev2 := again.want(t, "acquired")
	require.NotEqual(t, ev.Lease, ev2.Lease)
}

func TestSharedLock(t *testing.T) {
	a := startAgent(t, nil)
	r1 := a.open(t, "/v1/lock", HoldRequest{Name: "db", Mode: "shared"})
	r2 := a.open(t, "/v1/lock", HoldRequest{Name: "db", Mode: "shared"})
	require.Equal(t, "shared", r1.want(t, "acquired").Mode)
	require.Equal(t, "shared", r2.want(t, "acquired").Mode)

	w := a.open(t, "/v1/lock", HoldRequest{Name: "db"})
	w.want(t, "waiting")
	try := a.open(t, "/v1/lock", HoldRequest{Name: "db", Try: true})
	require.Equal(t, CodeBusy, try.want(t, "error").Code)

	r1.cancel()
	etcdtest.NotYet(t, w.events, "the writer while a reader holds", 300*time.Millisecond)
	r2.cancel()
	w.want(t, "acquired")
}

func TestSemaphoreLimit(t *testing.T) {
	a := startAgent(t, nil)
	s1 := a.open(t, "/v1/semaphore", HoldRequest{Name: "enc", Limit: 2})
	s2 := a.open(t, "/v1/semaphore", HoldRequest{Name: "enc", Limit: 2})
	e1, e2 := s1.acquired(t), s2.acquired(t) // the second may wait behind the first's queue key
	require.NotNil(t, e1.Slot)
	require.NotNil(t, e2.Slot)
	require.ElementsMatch(t, []int{0, 1}, []int{*e1.Slot, *e2.Slot})
	require.Equal(t, "enc/slots/"+strconv.Itoa(*e1.Slot), e1.Scope)

	s3 := a.open(t, "/v1/semaphore", HoldRequest{Name: "enc", Limit: 2})
	s3.want(t, "waiting")
	busy := a.open(t, "/v1/semaphore", HoldRequest{Name: "enc", Limit: 2, Try: true})
	require.Equal(t, CodeBusy, busy.want(t, "error").Code)
	mismatch := a.open(t, "/v1/semaphore", HoldRequest{Name: "enc", Limit: 3, Try: true})
	require.Equal(t, CodeLimitMismatch, mismatch.want(t, "error").Code)

	s1.cancel()
	e3 := s3.want(t, "acquired")
	require.Equal(t, *e1.Slot, *e3.Slot)
	require.Greater(t, e3.Token, e1.Token)

	var st struct {
		Limit   int `json:"limit"`
		Holders []json.RawMessage
	}
	require.Equal(t, http.StatusOK, a.get(t, "/v1/semaphore/status?name=enc", &st))
	require.Equal(t, 2, st.Limit)
	require.Len(t, st.Holders, 2)
}

func TestElectionCampaignObserve(t *testing.T) {
	a := startAgent(t, nil)
	obsCtx, stopObs := context.WithCancel(context.Background())
	defer stopObs()
	req, err := http.NewRequestWithContext(obsCtx, http.MethodGet, a.srv.URL+"/v1/election/observe?name=svc", nil)
	require.NoError(t, err)
	resp, err := a.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	leaders := make(chan string, 10)
	go func() {
		defer close(leaders)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var ev struct {
				Event  string  `json:"event"`
				Leader *string `json:"leader"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Event == "leader" {
				l := ""
				if ev.Leader != nil {
					l = *ev.Leader
				}
				leaders <- l
			}
		}
	}()
	require.Equal(t, "", etcdtest.Recv(t, leaders, "no leader yet", wait))

	c1 := a.open(t, "/v1/election/campaign", HoldRequest{Name: "svc", ID: "web-1"})
	ev := c1.want(t, "acquired")
	require.Equal(t, "election", ev.Kind)
	require.Equal(t, "svc/", ev.Scope)
	require.Equal(t, "web-1", etcdtest.Recv(t, leaders, "web-1 leads", wait))

	c2 := a.open(t, "/v1/election/campaign", HoldRequest{Name: "svc", ID: "web-2"})
	var cands struct {
		Candidates []struct {
			Value  string `json:"value"`
			Leader bool   `json:"leader"`
		} `json:"candidates"`
	}
	require.Eventually(t, func() bool {
		a.get(t, "/v1/election/candidates?name=svc", &cands)
		return len(cands.Candidates) == 2
	}, wait, 20*time.Millisecond)
	require.Equal(t, "web-1", cands.Candidates[0].Value)
	require.True(t, cands.Candidates[0].Leader)

	var leader struct {
		Leader *string `json:"leader"`
		Token  int64   `json:"token"`
	}
	a.get(t, "/v1/election/leader?name=svc", &leader)
	require.Equal(t, "web-1", *leader.Leader)
	require.Equal(t, int64(ev.Token), leader.Token)

	c1.cancel()
	ev2 := c2.want(t, "acquired")
	require.Greater(t, ev2.Token, ev.Token)
	require.Equal(t, "web-2", etcdtest.Recv(t, leaders, "web-2 leads", wait))
}

func TestBadRequests(t *testing.T) {
	a := startAgent(t, nil)
	for _, tc := range []struct {
		name, method, path, ctype, body string
		status                          int
		code                            string
	}{
		{"unknown field", "POST", "/v1/lock", "application/json", `{"name":"x","ttl":5}`, 400, CodeBadRequest},
		{"not json", "POST", "/v1/lock", "application/json", `name=x`, 400, CodeBadRequest},
		{"empty name", "POST", "/v1/lock", "application/json", `{}`, 400, CodeBadRequest},
		{"leading slash", "POST", "/v1/lock", "application/json", `{"name":"/x"}`, 400, CodeBadRequest},
		{"reserved segment", "POST", "/v1/lock", "application/json", `{"name":"x/read"}`, 400, CodeBadRequest},
		{"bad mode", "POST", "/v1/lock", "application/json", `{"name":"x","mode":"both"}`, 400, CodeBadRequest},
		{"try and timeout", "POST", "/v1/lock", "application/json", `{"name":"x","try":true,"timeout":1}`, 400, CodeBadRequest},
		{"negative timeout", "POST", "/v1/lock", "application/json", `{"name":"x","timeout":-1}`, 400, CodeBadRequest},
		{"timeout past 1e9 s", "POST", "/v1/lock", "application/json", `{"name":"x","timeout":1e300}`, 400, CodeBadRequest},
		{"no limit", "POST", "/v1/semaphore", "application/json", `{"name":"x"}`, 400, CodeBadRequest},
		{"mode on semaphore", "POST", "/v1/semaphore", "application/json", `{"name":"x","limit":2,"mode":"shared"}`, 400, CodeBadRequest},
		{"campaign without id", "POST", "/v1/election/campaign", "application/json", `{"name":"x"}`, 400, CodeBadRequest},
		{"campaign try", "POST", "/v1/election/campaign", "application/json", `{"name":"x","id":"a","try":true}`, 400, CodeBadRequest},
		{"no content type", "POST", "/v1/lock", "", `{"name":"x"}`, 415, CodeUnsupported},
		{"form content type", "POST", "/v1/lock", "application/x-www-form-urlencoded", `{"name":"x"}`, 415, CodeUnsupported},
		{"status without name", "GET", "/v1/lock/status", "", ``, 400, CodeBadRequest},
		{"status bad name", "GET", "/v1/semaphore/status?name=a//b", "", ``, 400, CodeBadRequest},
		{"leader bad name", "GET", "/v1/election/leader?name=a%20b", "", ``, 400, CodeBadRequest},
		{"no route", "GET", "/v1/locks", "", ``, 404, CodeNotFound},
		{"wrong method", "GET", "/v1/lock", "", ``, 404, CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, a.srv.URL+tc.path, strings.NewReader(tc.body))
			require.NoError(t, err)
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			requireError(t, a.srv.Client(), req, tc.status, tc.code)
		})
	}
}

func requireError(t *testing.T, c *http.Client, req *http.Request, status int, code string) {
	t.Helper()
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, status, resp.StatusCode, "%s", b)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var body errorBody
	require.NoError(t, json.Unmarshal(b, &body), "%s", b)
	require.Equal(t, code, body.Error.Code, "%s", b)
	require.NotEmpty(t, body.Error.Message)
}

func TestGuard(t *testing.T) {
	t.Run("no token: loopback Host only", func(t *testing.T) {
		a := startAgent(t, nil)
		req, err := http.NewRequest("GET", a.srv.URL+"/v1/session", nil)
		require.NoError(t, err)
		req.Host = "coord.example.com"
		requireError(t, a.srv.Client(), req, http.StatusForbidden, CodeForbidden)
	})
	t.Run("token", func(t *testing.T) {
		a := startAgent(t, func(c *Config) { c.Token = httpguard.NewSecret("s3cret") })
		req, err := http.NewRequest("GET", a.srv.URL+"/v1/session", nil)
		require.NoError(t, err)
		requireError(t, a.srv.Client(), req, http.StatusUnauthorized, CodeUnauthorized)
		req.Header.Set("Authorization", "Bearer s3cret")
		req.Host = "coord.example.com"
		resp, err := a.srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	})
}

func TestCloseReleasesHolds(t *testing.T) {
	_, cli := etcd.StartWithClient(t)
	api, err := New(etcdtest.Ctx(t, wait), Config{Client: cli, SessionOptions: []session.Option{session.WithTTL(5 * time.Second)}})
	require.NoError(t, err)
	srv := httptest.NewServer(api)
	defer srv.Close()
	a := &agent{api: api, srv: srv, cli: cli}
	h := a.open(t, "/v1/lock", HoldRequest{Name: "x"})
	ev := h.want(t, "acquired")
	require.NoError(t, api.Close())
	lost := h.want(t, "lost")
	require.Contains(t, lost.Reason, "shutting down")
	h.ended(t)
	resp, err := cli.Get(etcdtest.Ctx(t, wait), ev.Key)
	require.NoError(t, err)
	require.Zero(t, resp.Count, "the key outlived the agent's Close")

	req, err := http.NewRequest("GET", srv.URL+"/v1/session", nil)
	require.NoError(t, err)
	requireError(t, srv.Client(), req, http.StatusServiceUnavailable, CodeShuttingDown)
}

// TestReleaseConfirmed: a client that shuts down only its sending side
// reads "released" once the key is gone, so its release can wait for it.
func TestReleaseConfirmed(t *testing.T) {
	a := startAgent(t, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.srv.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	body := `{"name":"x"}`
	_, err = fmt.Fprintf(conn, "POST /v1/lock HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	next := func() Event {
		for lines.Scan() {
			var ev Event
			require.NoError(t, json.Unmarshal(lines.Bytes(), &ev))
			if ev.Event != "held" {
				return ev
			}
		}
		t.Fatalf("stream ended: %v", lines.Err())
		return Event{}
	}
	ev := next()
	require.Equal(t, "acquired", ev.Event)
	require.NoError(t, conn.(*net.TCPConn).CloseWrite())
	rel := next()
	require.Equal(t, "released", rel.Event, "%+v", rel)
	require.Equal(t, ev.Token, rel.Token)
	got, err := a.cli.Get(etcdtest.Ctx(t, wait), ev.Key)
	require.NoError(t, err)
	require.Zero(t, got.Count, "released before the key was deleted")
	require.False(t, lines.Scan(), "a line after released: %s", lines.Text())
}

// TestLostWhenKeyDeleted: an operator deleting the holder's key is a loss
// too, reported on the stream; the agent's session goes on.
func TestLostWhenKeyDeleted(t *testing.T) {
	a := startAgent(t, nil)
	h := a.open(t, "/v1/election/campaign", HoldRequest{Name: "svc", ID: "a"})
	ev := h.want(t, "acquired")
	_, err := a.cli.Delete(etcdtest.Ctx(t, wait), ev.Key)
	require.NoError(t, err)
	lost := h.want(t, "lost")
	require.Contains(t, lost.Reason, "deleted")
	h.ended(t)
	again := a.open(t, "/v1/election/campaign", HoldRequest{Name: "svc", ID: "a"})
	require.Equal(t, ev.Lease, again.want(t, "acquired").Lease, "the session outlived the key")
}

// TestTimeoutBoundsOnlyTheWait: a hold acquired with a timeout stays held
// after the timeout has passed.
func TestTimeoutBoundsOnlyTheWait(t *testing.T) {
	a := startAgent(t, nil)
	short := 0.3
	h := a.open(t, "/v1/lock", HoldRequest{Name: "x", Timeout: &short})
	ev := h.want(t, "acquired")
	deadline := time.Now().Add(time.Second)
	for n := 0; time.Now().Before(deadline) || n < 3; n++ {
		held := etcdtest.Recv(t, h.events, "a held line", wait)
		require.Equal(t, "held", held.Event, "%+v", held)
	}
	resp, err := a.cli.Get(etcdtest.Ctx(t, wait), ev.Key)
	require.NoError(t, err)
	require.Equal(t, int64(1), resp.Count, "the key went with the timeout")
}

func TestNotAcquiredWithinOnlyForTheRequestsTimeout(t *testing.T) {
	live := context.Background()
	expired, cancel := context.WithTimeout(live, 0)
	defer cancel()
	<-expired.Done()
	d := 0.5
	timed := HoldRequest{Name: "n", Timeout: &d}
	inner := fmt.Errorf("session: grant: %w", context.DeadlineExceeded)

	err := notAcquiredWithin(live, expired, "lock", timed, inner)
	require.EqualError(t, err, `lock "n" not acquired within 500ms: context deadline exceeded`)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// A deadline of the library's while the request's timeout still runs,
	// no timeout asked for, the request's own end: unchanged.
	require.Same(t, inner, notAcquiredWithin(live, live, "lock", timed, inner))
	require.Same(t, inner, notAcquiredWithin(live, expired, "lock", HoldRequest{Name: "n"}, inner))
	require.Same(t, inner, notAcquiredWithin(expired, expired, "lock", timed, inner))
	other := errors.New("etcdserver: no leader")
	require.Same(t, other, notAcquiredWithin(live, expired, "lock", timed, other))
	require.EqualError(t, notAcquiredWithin(live, expired, "election", timed, inner), `election "n": leadership not won within 500ms: context deadline exceeded`)
}

// A lane opened for a second hold of one name is closed once unused for
// LaneIdle: its lease stops being kept alive and goes. One taken again
// before that stays; the first lane always does.
func TestIdleLanesClose(t *testing.T) {
	const idle = 300 * time.Millisecond
	a := startAgent(t, func(c *Config) { c.LaneIdle = idle })
	alive := func(lease string) bool {
		id, err := strconv.ParseInt(lease, 16, 64)
		require.NoError(t, err)
		resp, err := a.cli.TimeToLive(context.Background(), clientv3.LeaseID(id))
		require.NoError(t, err)
		return resp.TTL > 0
	}
	first := a.open(t, "/v1/lock", HoldRequest{Name: "jobs/burst"})
	ev1 := first.want(t, "acquired")
	var waiting []*hold
	for range 3 {
		h := a.open(t, "/v1/lock", HoldRequest{Name: "jobs/burst"})
		h.want(t, "waiting")
		waiting = append(waiting, h)
	}
	require.Equal(t, 4, a.api.lanes.count())
	// One waiter gives up, and a new one comes while the lane it left is
	// idle or about to be: whichever lane it takes, it is not closed under
	// it, though its idle time passes twice while it waits.
	waiting[0].cancel()
	<-waiting[0].done
	late := a.open(t, "/v1/lock", HoldRequest{Name: "jobs/burst"})
	late.want(t, "waiting")
	time.Sleep(2 * idle) // what must not happen in this time: a used lane closed
	first.cancel()
	var leases []string
	for _, h := range append(waiting[1:], late) {
		ev := h.acquired(t)
		require.NotEqual(t, ev1.Lease, ev.Lease)
		require.True(t, alive(ev.Lease), "the lane of a held lock was closed")
		leases = append(leases, ev.Lease)
		h.cancel()
		<-h.done
	}

	require.Eventually(t, func() bool { return a.api.lanes.count() == 1 }, 10*time.Second, 20*time.Millisecond,
		"the lanes opened for the burst were not closed")
	// Their leases go (left to expire after a clean release, as Close
	// leaves them; no keepalive any more): within the 5 s TTL of
	// startAgent and a margin.
	for _, l := range leases {
		require.Eventually(t, func() bool { return !alive(l) }, 15*time.Second, 100*time.Millisecond, "lease %s still kept alive", l)
	}
	require.True(t, alive(ev1.Lease), "the first lane stays")

	// What is left serves as before.
	again := a.open(t, "/v1/lock", HoldRequest{Name: "jobs/burst"})
	require.Equal(t, ev1.Lease, again.want(t, "acquired").Lease)
	again.cancel()
}

// The agent's first session, lost (here its lease revoked behind its
// back; an etcd outage past the TTL is the same), is granted anew without
// waiting for a hold to take its lane: GET /v1/session says alive again
// with the new lease once etcd answers, and the log says both. It stayed
// dead (alive false, the old lease) until the next hold.
func TestFirstSessionGrantedAnewAfterALoss(t *testing.T) {
	var log testio.SyncBuffer
	a := startAgent(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	lost := a.api.Lease()
	_, err := a.cli.Revoke(etcdtest.Ctx(t, wait), lost)
	require.NoError(t, err)
	var info SessionInfo
	require.Eventually(t, func() bool {
		resp, err := a.srv.Client().Get(a.srv.URL + "/v1/session")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
		return info.Alive && info.Lease != fmt.Sprintf("%x", int64(lost))
	}, 10*time.Second, 10*time.Millisecond, "the session was not granted anew; last: %+v; log: %s", info, log.String())
	require.Equal(t, 1, info.Lanes)
	require.Contains(t, log.String(), fmt.Sprintf(`msg="session ended: a new one is granted as soon as etcd answers" lease=%x`, int64(lost)))
	// The line is logged after the grant that /v1/session already shows.
	granted := `msg="session granted anew" lease=` + info.Lease
	require.Eventually(t, func() bool { return strings.Contains(log.String(), granted) }, 10*time.Second, 10*time.Millisecond,
		"no %q; log: %s", granted, log.String())
	ttl, err := a.cli.TimeToLive(etcdtest.Ctx(t, wait), a.api.Lease())
	require.NoError(t, err)
	require.Positive(t, ttl.TTL, "the new lease is kept alive")

	h := a.open(t, "/v1/lock", HoldRequest{Name: "jobs/after-loss", Try: true})
	require.Equal(t, info.Lease, h.acquired(t).Lease, "a hold takes the renewed session")
	h.cancel()
	<-h.done
}
