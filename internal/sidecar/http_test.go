package sidecar

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/buildinfo"
	"github.com/coordkit/coordkit/internal/httpguard"
)

var testBuild = buildinfo.Info{Module: "github.com/coordkit/coordkit", Version: "v9.9.9", Revision: "abc123",
	GoVersion: "go1.26.8", Platform: "linux/amd64", EtcdClient: "v3.7.3", EtcdServer: "v3.7.3"}

func newTestAPI(t *testing.T, resign func(context.Context) error) (*Tracker, *httptest.Server, *prometheus.Registry) {
	t.Helper()
	tr := NewTracker("svc", "svc/", "a", fixedClock{t0})
	reg := prometheus.NewRegistry()
	_, err := NewMetrics(reg, "svc", "a", func() time.Duration { return 1500 * time.Millisecond }, testBuild)
	require.NoError(t, err)
	api := NewAPI(APIConfig{Tracker: tr, Resign: resign, Gatherer: reg, Heartbeat: 50 * time.Millisecond, Build: testBuild})
	srv := httptest.NewServer(api)
	t.Cleanup(func() {
		api.Close()
		srv.Close()
	})
	return tr, srv, reg
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestSidecarHTTPStatusCodes(t *testing.T) {
	alive := true
	aliveFn := func() bool { return alive }
	tr, srv, _ := newTestAPI(t, nil)

	type probe struct {
		path   string
		status int
		body   string
	}
	steps := []struct {
		name   string
		ev     *Event
		probes []probe
	}{
		{"connecting", nil, []probe{
			{"/healthz", 503, `"reason":"connecting to etcd"`},
			{"/livez", 200, `{"status":"ok"}`}, // the process serves, whatever etcd does
			{"/readyz", 503, `"status":"unavailable"`},
			{"/v1/leader", 200, `{"name":"svc","scope":"svc/","id":"a","leader":null,"token":null,"is_leader":false,"since":"2026-01-02T03:04:05Z"}`},
		}},
		{"standby", &Event{Kind: SessionUp, Alive: aliveFn}, []probe{
			{"/healthz", 200, `{"status":"ok"}`},
			{"/readyz", 503, `no leader elected`},
		}},
		{"other leader", &Event{Kind: LeaderObserved, Leader: "b", Token: 5}, []probe{
			{"/readyz", 503, `the leader is b, token 5`},
			{"/v1/leader", 200, `"leader":"b","token":5,"is_leader":false`},
		}},
		{"leading", &Event{Kind: Elected, Token: 9, Alive: aliveFn}, []probe{
			{"/readyz", 200, `{"status":"ok","token":9}`},
			{"/healthz", 200, `ok`},
			{"/v1/leader", 200, `"leader":"a","token":9,"is_leader":true`},
		}},
		{"deadline passed without an event", nil, nil},
		{"lost", &Event{Kind: SessionDown, Reason: "lease revoked"}, []probe{
			{"/readyz", 503, `no leader elected`},
			{"/healthz", 503, `lease revoked`},
			{"/livez", 200, `{"status":"ok"}`},
			{"/v1/leader", 200, `"leader":null`},
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.ev != nil {
				tr.Apply(*st.ev)
			}
			if st.name == "deadline passed without an event" {
				alive = false
				code, body := get(t, srv.URL+"/readyz")
				require.Equal(t, 503, code)
				require.Contains(t, body, "deadline")
				code, _ = get(t, srv.URL+"/healthz")
				require.Equal(t, 503, code)
				alive = true
			}
			for _, p := range st.probes {
				code, body := get(t, srv.URL+p.path)
				require.Equal(t, p.status, code, "%s: %s", p.path, body)
				require.Contains(t, body, p.body, p.path)
			}
		})
	}
}

func TestSidecarHTTPMethods(t *testing.T) {
	_, srv, _ := newTestAPI(t, nil)
	resp, err := http.Post(srv.URL+"/v1/leader", "text/plain", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	resp, err = http.Post(srv.URL+"/v1/resign", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotImplemented, resp.StatusCode)
	code, _ := get(t, srv.URL+"/v1/resign")
	require.Equal(t, http.StatusMethodNotAllowed, code)
}

func TestSidecarHTTPResign(t *testing.T) {
	var tr *Tracker
	resign := func(ctx context.Context) error {
		if !tr.State().IsLeader {
			return ErrNotLeader
		}
		tr.Apply(Event{Kind: Deposed, Reason: "resigned"})
		return nil
	}
	tr, srv, _ := newTestAPI(t, resign)
	post := func() (int, string) {
		resp, err := http.Post(srv.URL+"/v1/resign", "application/json", nil)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post()
	require.Equal(t, http.StatusConflict, code)
	require.Contains(t, body, `"error":"sidecar: not the leader"`)

	tr.Apply(Event{Kind: Elected, Token: 3})
	code, body = post()
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `"is_leader":false`)
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	name string
	data string
}

// readSSE parses events from r onto the returned channel, skipping comments.
func readSSE(r io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" || ev.data != "" {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return ch
}

func TestSidecarHTTPWatchSSE(t *testing.T) {
	tr, srv, _ := newTestAPI(t, nil)
	tr.Apply(Event{Kind: LeaderObserved, Leader: "b", Token: 5})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/watch", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

	// Raw framing of the first event.
	br := bufio.NewReader(resp.Body)
	line1, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "event: leader\n", line1)
	line2, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, `data: {"name":"svc","scope":"svc/","id":"a","leader":"b","token":5,"is_leader":false,"since":"2026-01-02T03:04:05Z"}`+"\n", line2)
	line3, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "\n", line3)

	events := readSSE(br)
	tr.Apply(Event{Kind: SessionUp}) // not a leader change: no event
	tr.Apply(Event{Kind: Elected, Token: 7})
	tr.Apply(Event{Kind: Deposed, Reason: "resigned"})
	wantTokens := []*fencing.Token{ptr(fencing.Token(7)), nil}
	for i, want := range wantTokens {
		select {
		case ev := <-events:
			require.Equal(t, "leader", ev.name)
			var v View
			require.NoError(t, json.Unmarshal([]byte(ev.data), &v))
			require.Equal(t, want, v.Token, "event %d", i)
			require.Equal(t, want != nil, v.IsLeader)
		case <-time.After(5 * time.Second):
			t.Fatalf("event %d not received", i)
		}
	}
}

func TestSidecarHTTPWatchEndsOnClose(t *testing.T) {
	tr := NewTracker("svc", "svc/", "a", fixedClock{t0})
	api := NewAPI(APIConfig{Tracker: tr})
	srv := httptest.NewServer(api)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/watch")
	require.NoError(t, err)
	defer resp.Body.Close()
	events := readSSE(resp.Body)
	<-events
	api.Close()
	select {
	case _, ok := <-events:
		require.False(t, ok, "stream must end")
	case <-time.After(5 * time.Second):
		t.Fatal("stream did not end on Close")
	}
}

func ptr[T any](v T) *T { return &v }

func TestSidecarMetricsNames(t *testing.T) {
	_, srv, reg := newTestAPI(t, nil)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, n := range []string{MetricIsLeader, MetricLeaderTransitions, MetricCampaignSeconds, MetricKeepAliveSeconds, MetricLeaseRemainingSecs} {
		require.True(t, names[n], "metric %s missing; have %v", n, names)
	}
	code, body := get(t, srv.URL+"/metrics")
	require.Equal(t, 200, code)
	require.Contains(t, body, `coordkit_sidecar_lease_remaining_seconds{election="svc",id="a"} 1.5`)
	require.Contains(t, body, "# TYPE coordkit_sidecar_campaign_duration_seconds histogram")
}

func TestSidecarMetricsObserve(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, "svc", "a", nil, testBuild)
	require.NoError(t, err)
	s := NewState("svc", "a", t0)
	for _, ev := range []Event{
		{Kind: LeaderObserved, At: at(1), Leader: "b", Token: 3},
		{Kind: Elected, At: at(2), Token: 5},
	} {
		var c Change
		s, c = s.Apply(ev)
		m.Observe(s, c)
	}
	m.ObserveCampaign(20 * time.Millisecond)
	m.ObserveKeepAlive(2 * time.Millisecond)
	values := gatherValues(t, reg)
	require.Equal(t, 1.0, values[MetricIsLeader])
	require.Equal(t, 2.0, values[MetricLeaderTransitions])
	require.Equal(t, 1.0, values[MetricCampaignSeconds+"_count"])
	require.Equal(t, 1.0, values[MetricKeepAliveSeconds+"_count"])
	require.Equal(t, 0.0, values[MetricLeaseRemainingSecs])

	// Two sidecars in one process: separate registries, no collision.
	_, err = NewMetrics(prometheus.NewRegistry(), "svc", "b", nil, testBuild)
	require.NoError(t, err)
	_, err = NewMetrics(reg, "svc", "a", nil, testBuild)
	require.Error(t, err, "registering twice on one registry must fail")
}

func gatherValues(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetGauge() != nil:
				out[mf.GetName()] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[mf.GetName()] = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				out[mf.GetName()+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func TestSidecarStatusAndBuildInfoMetric(t *testing.T) {
	tr, srv, _ := newTestAPI(t, nil)
	tr.Apply(Event{Kind: Elected, Token: 7})
	code, body := get(t, srv.URL+"/v1/status")
	require.Equal(t, http.StatusOK, code, body)
	var st Status
	require.NoError(t, json.Unmarshal([]byte(body), &st), body)
	require.Equal(t, testBuild, st.Build)
	require.True(t, st.View.IsLeader)
	require.True(t, st.Ready)
	require.Equal(t, fencing.Token(7), *st.View.Token)

	code, body = get(t, srv.URL+"/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `coordctl_build_info{election="svc",etcd_client="v3.7.3",etcd_server="v3.7.3",go_version="go1.26.8",id="a",modified="false",revision="abc123",version="v9.9.9"} 1`)
}

// POST /v1/resign is the one request that changes state: a web page the
// user opens (DNS rebinding, a cross-site form) must not reach it, and off
// loopback it needs the token. Before httpguard, every request below
// answered 200 and resigned.
func TestSidecarResignGuard(t *testing.T) {
	resigned := 0
	var tr *Tracker
	resign := func(ctx context.Context) error {
		resigned++
		tr.Apply(Event{Kind: Deposed, Reason: "resigned"})
		return nil
	}
	newAPI := func(token string) *API {
		tr = NewTracker("svc", "svc/", "a", fixedClock{t0})
		tr.Apply(Event{Kind: Elected, Token: 3})
		return NewAPI(APIConfig{Tracker: tr, Resign: resign, Token: httpguard.NewSecret(token)})
	}
	post := func(api *API, host, ctype, auth string) (int, string) {
		r := httptest.NewRequest(http.MethodPost, "http://"+host+"/v1/resign", strings.NewReader("{}"))
		if ctype != "" {
			r.Header.Set("Content-Type", ctype)
		}
		if auth != "" {
			r.Header.Set("Authorization", "Bearer "+auth)
		}
		w := httptest.NewRecorder()
		api.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	tests := []struct {
		name        string
		token       string
		host, ctype string
		auth        string
		want        int
		wantInBody  string
	}{
		{"a rebound DNS name", "", "evil.example:4040", "application/json", "", http.StatusForbidden, "not a loopback address"},
		{"a cross-site form's content type", "", "127.0.0.1:4040", "text/plain", "", http.StatusUnsupportedMediaType, "application/json"},
		{"no content type", "", "localhost:4040", "", "", http.StatusUnsupportedMediaType, "application/json"},
		{"loopback and JSON", "", "127.0.0.1:4040", "application/json", "", http.StatusOK, `"is_leader":false`},
		{"token required, none sent", "s3cret-s3cret-s3", "10.0.0.7:4040", "application/json", "", http.StatusUnauthorized, "missing or wrong token"},
		{"token required, wrong one", "s3cret-s3cret-s3", "10.0.0.7:4040", "application/json", "nope", http.StatusUnauthorized, "missing or wrong token"},
		{"token and JSON", "s3cret-s3cret-s3", "10.0.0.7:4040", "application/json; charset=utf-8", "s3cret-s3cret-s3", http.StatusOK, `"is_leader":false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := resigned
			api := newAPI(tt.token)
			code, body := post(api, tt.host, tt.ctype, tt.auth)
			require.Equal(t, tt.want, code, body)
			require.Contains(t, body, tt.wantInBody)
			if tt.want == http.StatusOK {
				require.Equal(t, before+1, resigned)
			} else {
				require.Equal(t, before, resigned, "a refused request must not resign")
			}
		})
	}

	// Read endpoints stay open: a probe from the pod network, no token.
	api := newAPI("s3cret-s3cret-s3")
	for _, path := range []string{"/v1/leader", "/v1/status", "/readyz", "/healthz"} {
		r := httptest.NewRequest(http.MethodGet, "http://10.0.0.7:4040"+path, nil)
		w := httptest.NewRecorder()
		api.ServeHTTP(w, r)
		require.NotEqual(t, http.StatusUnauthorized, w.Code, path)
		require.NotEqual(t, http.StatusForbidden, w.Code, path)
	}
}
