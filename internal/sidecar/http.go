package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/buildinfo"
	"github.com/coordkit/coordkit/internal/httpguard"
)

// View is the leader view served by GET /v1/leader and streamed by
// GET /v1/watch. Leader and Token are null while there is no leader.
type View struct {
	Name     string         `json:"name"`
	Scope    string         `json:"scope"`
	ID       string         `json:"id"`
	Leader   *string        `json:"leader"`
	Token    *fencing.Token `json:"token"`
	IsLeader bool           `json:"is_leader"`
	Since    time.Time      `json:"since"`
}

// View returns the state as the HTTP API shows it.
func (s State) View() View {
	v := View{Name: s.Name, Scope: s.Scope, ID: s.ID, IsLeader: s.IsLeader, Since: s.Since.UTC()}
	if s.HasLeader {
		leader, tok := s.Leader, s.Token
		v.Leader, v.Token = &leader, &tok
	}
	return v
}

// Probe is the body of /livez, /healthz and /readyz.
type Probe struct {
	Status string         `json:"status"` // "ok" or "unavailable"
	Reason string         `json:"reason,omitempty"`
	Token  *fencing.Token `json:"token,omitempty"`
}

// Status is the body of GET /v1/status: the view, both probes' answers
// and the build of coordctl that serves them.
type Status struct {
	View        View           `json:"view"`
	Healthy     bool           `json:"healthy"`
	HealthError string         `json:"health_reason,omitempty"`
	Ready       bool           `json:"ready"`
	ReadyError  string         `json:"ready_reason,omitempty"`
	Application *AppStatus     `json:"application,omitempty"` // with a health URL
	Build       buildinfo.Info `json:"build"`
}

// apiError is the body of an error answer.
type apiError struct {
	Error string `json:"error"`
	View  *View  `json:"state,omitempty"`
}

// APIConfig configures NewAPI.
type APIConfig struct {
	// Tracker is the state the API serves. Required.
	Tracker *Tracker
	// Resign makes this instance step down and campaign again at the back
	// of the queue; it returns ErrNotLeader when it does not lead. nil
	// disables POST /v1/resign (501).
	Resign func(ctx context.Context) error
	// Gatherer serves GET /metrics; nil disables it (404).
	Gatherer prometheus.Gatherer
	// Heartbeat is the interval of SSE comment lines that keep idle
	// proxies from closing /v1/watch; 15s when zero.
	Heartbeat time.Duration
	// ResignTimeout bounds POST /v1/resign; 5s when zero.
	ResignTimeout time.Duration
	// ReadTimeout bounds GET /v1/candidates' read of etcd; 5s when zero.
	ReadTimeout time.Duration
	// Build is served by GET /v1/status.
	Build buildinfo.Info
	// Token, when not empty, is required on state-changing requests
	// (POST /v1/resign); without one, those requests must name a loopback
	// Host. Either way they must send Content-Type: application/json.
	// Read endpoints stay open (see NewAPI).
	Token *httpguard.Secret
	// ResignTo hands the leadership to a named candidate (POST
	// /v1/resign?to=ID, or to=best); nil answers those requests 501.
	ResignTo func(ctx context.Context, to string) error
	// Candidates serves GET /v1/candidates; nil answers 501.
	Candidates func(ctx context.Context) ([]election.Candidate, error)
	// Policy is shown by GET /v1/candidates.
	Policy election.Policy
	// Application, when set, is the application's health GET /v1/status
	// shows (Config.Health).
	Application func() AppStatus
}

// API is the sidecar's HTTP API. Close ends open watch streams, so that an
// http.Server's Shutdown does not wait for them.
type API struct {
	cfg       APIConfig
	mux       *http.ServeMux
	closing   chan struct{}
	closeOnce sync.Once
}

var _ http.Handler = (*API)(nil)

// NewAPI returns the HTTP API:
//
//	GET  /v1/leader  the View as JSON
//	GET  /v1/status  Status: the View, both probes and the build
//	GET  /v1/watch   Server-Sent Events: the current View, then one per change
//	POST /v1/resign  step down, campaign again at the back of the queue;
//	                 ?to=ID or ?to=best: hand over to that candidate
//	GET  /v1/candidates  the queue with each candidate's attributes
//	GET  /livez      200 while the process serves: the liveness probe that
//	                 does not depend on etcd (restarting the sidecar does
//	                 not bring etcd back)
//	GET  /healthz    200 while the session with etcd is alive, else 503
//	                 (monitoring; not a probe that restarts or unroutes)
//	GET  /readyz     200 while this instance leads, else 503
//	GET  /metrics    Prometheus text
//
// POST /v1/resign, the one request that changes state, goes through
// httpguard: the token when cfg.Token is set (else a loopback Host), and
// Content-Type: application/json, so that no web page the user opens can
// make the sidecar resign. The GET endpoints stay open, without token or
// Host check: kubelet probes and Prometheus scrapes carry neither, and
// what they show (the leader's id and token) any etcd client of the
// election can read anyway.
func NewAPI(cfg APIConfig) *API {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.ResignTimeout <= 0 {
		cfg.ResignTimeout = 5 * time.Second
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 5 * time.Second
	}
	a := &API{cfg: cfg, mux: http.NewServeMux(), closing: make(chan struct{})}
	a.mux.HandleFunc("GET /v1/leader", a.handleLeader)
	a.mux.HandleFunc("GET /v1/watch", a.handleWatch)
	a.mux.HandleFunc("GET /v1/status", a.handleStatus)
	a.mux.Handle("POST /v1/resign", a.stateChanging(http.HandlerFunc(a.handleResign)))
	a.mux.HandleFunc("GET /v1/candidates", a.handleCandidates)
	a.mux.HandleFunc("GET /livez", a.handleLive)
	a.mux.HandleFunc("GET /healthz", a.handleHealth)
	a.mux.HandleFunc("GET /readyz", a.handleReady)
	if cfg.Gatherer != nil {
		a.mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	return a
}

// ServeHTTP serves the API.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// Close ends the open watch streams; later watches end at once.
func (a *API) Close() { a.closeOnce.Do(func() { close(a.closing) }) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (a *API) handleLeader(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, a.cfg.Tracker.State().View())
}

// stateChanging puts next behind the guard and the JSON content-type check.
func (a *API) stateChanging(next http.Handler) http.Handler {
	return httpguard.Guard{Secret: a.cfg.Token, Name: "sidecar"}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !httpguard.JSONBody(r) {
			writeJSON(w, http.StatusUnsupportedMediaType, apiError{Error: "sidecar: " + r.Method + " " + r.URL.Path + " wants Content-Type: application/json"})
			return
		}
		next.ServeHTTP(w, r)
	}), func(w http.ResponseWriter, status int, msg string) {
		writeJSON(w, status, apiError{Error: msg})
	})
}

func (a *API) handleStatus(w http.ResponseWriter, r *http.Request) {
	s := a.cfg.Tracker.State()
	st := Status{View: s.View(), Build: a.cfg.Build}
	st.Healthy, st.HealthError = s.Health()
	st.Ready, st.ReadyError = s.Ready()
	if a.cfg.Application != nil {
		app := a.cfg.Application()
		st.Application = &app
	}
	writeJSON(w, http.StatusOK, st)
}

func (a *API) handleLive(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, Probe{Status: "ok"})
}

func (a *API) handleHealth(w http.ResponseWriter, r *http.Request) {
	ok, reason := a.cfg.Tracker.State().Health()
	if !ok {
		writeJSON(w, http.StatusServiceUnavailable, Probe{Status: "unavailable", Reason: reason})
		return
	}
	writeJSON(w, http.StatusOK, Probe{Status: "ok"})
}

func (a *API) handleReady(w http.ResponseWriter, r *http.Request) {
	s := a.cfg.Tracker.State()
	ok, reason := s.Ready()
	if !ok {
		writeJSON(w, http.StatusServiceUnavailable, Probe{Status: "unavailable", Reason: reason})
		return
	}
	tok := s.Token
	writeJSON(w, http.StatusOK, Probe{Status: "ok", Token: &tok})
}

func (a *API) handleResign(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Resign == nil {
		writeJSON(w, http.StatusNotImplemented, apiError{Error: "resign is not available"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.ResignTimeout)
	defer cancel()
	if to, ok, err := resignTarget(r); err != nil || ok {
		a.handleResignTo(ctx, w, to, err)
		return
	}
	err := a.cfg.Resign(ctx)
	v := a.cfg.Tracker.State().View()
	switch {
	case errors.Is(err, ErrNotLeader):
		writeJSON(w, http.StatusConflict, apiError{Error: err.Error(), View: &v})
	case err != nil:
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: err.Error(), View: &v})
	default:
		writeJSON(w, http.StatusOK, v)
	}
}

// handleWatch streams views as Server-Sent Events:
//
//	event: leader
//	data: {"name":…,"leader":…,"token":…,"is_leader":…,"since":…}
//
// The first event is the current view; then one per change of leader, token
// or leadership of this instance. Lines starting with ':' are heartbeats.
func (a *API) handleWatch(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	views, cancel := a.cfg.Tracker.Subscribe()
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	heartbeat := time.NewTicker(a.cfg.Heartbeat)
	defer heartbeat.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-a.closing:
			return
		case v := <-views:
			err = writeEvent(w, "leader", v)
		case <-heartbeat.C:
			_, err = fmt.Fprint(w, ": heartbeat\n\n")
		}
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// writeEvent writes one SSE event whose data is v as one line of JSON.
func writeEvent(w http.ResponseWriter, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	return err
}
