package coordapi

import (
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/httpguard"
	"github.com/coordkit/coordkit/internal/httpserve"
	"github.com/coordkit/coordkit/session"
)

//go:embed openapi.json
var openAPI []byte

// Config configures New.
type Config struct {
	// Client is the etcd client every hold and read uses. Required.
	Client *clientv3.Client
	// SessionOptions are given to the agent's sessions (session.WithTTL...).
	SessionOptions []session.Option
	// Token, when it requires one, is required on every request
	// ("Authorization: Bearer TOKEN" or ?token=); without one, requests
	// must name a loopback Host (httpguard.Guard). A non-loopback listener
	// must set it.
	Token *httpguard.Secret
	// HeldInterval is the interval of "held" lines on a hold's stream;
	// DefaultHeldInterval when zero.
	HeldInterval time.Duration
	// RequestTimeout bounds the reads (status, leader, candidates) and a
	// release; DefaultRequestTimeout when zero.
	RequestTimeout time.Duration
	// LaneIdle: a lane other than the first (a session opened for a second
	// hold of one name) is closed once nothing has held or waited on it
	// this long; DefaultLaneIdle when zero.
	LaneIdle time.Duration
	// Logger receives operational notes (a hold lost, and why; a release
	// that failed); nil discards them.
	Logger *slog.Logger
	// PeerTimeout (Listen's server): a client connection whose peer has
	// left the agent's writes (the "held" lines) unacknowledged this long
	// ends, and its holds are released, as when it closes: a client whose
	// machine died or whose network was cut sends no FIN (httpserve.
	// PeerTimeout). session.DefaultTTL when zero; the agent gives its --ttl.
	PeerTimeout time.Duration
}

// Defaults of Config.
const (
	DefaultHeldInterval   = time.Second
	DefaultRequestTimeout = 5 * time.Second
	DefaultLaneIdle       = time.Minute
)

// A route is one method and path the API serves; openapi.json describes
// exactly these (TestOpenAPIMatchesRoutes).
type route struct {
	method, path string
	handle       func(*API, http.ResponseWriter, *http.Request)
	body         bool // a POST with a JSON body: Content-Type application/json required
}

var routes = []route{
	{"POST", "/v1/lock", (*API).handleLock, true},
	{"POST", "/v1/semaphore", (*API).handleSemaphore, true},
	{"POST", "/v1/election/campaign", (*API).handleCampaign, true},
	{"GET", "/v1/lock/status", (*API).handleLockStatus, false},
	{"GET", "/v1/semaphore/status", (*API).handleSemStatus, false},
	{"GET", "/v1/election/leader", (*API).handleLeader, false},
	{"GET", "/v1/election/candidates", (*API).handleCandidates, false},
	{"GET", "/v1/election/observe", (*API).handleObserve, false},
	{"GET", "/v1/session", (*API).handleSession, false},
	{"GET", "/v1/openapi.json", (*API).handleOpenAPI, false},
}

// API is the coordination API, an http.Handler. Close ends every hold
// (releasing it) and stream before it closes the sessions.
type API struct {
	cfg     Config
	lanes   *lanes
	handler http.Handler

	ctx    context.Context // ended by Close, cause errShuttingDown
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	closed   bool
	active   sync.WaitGroup // requests in progress
	renewing sync.WaitGroup // lanes.renewFirst
}

// renewBackoff paces the attempts to grant the first lane's session anew
// after a loss while etcd does not answer: full jitter, capped at 100ms
// doubling to 2s, as the sidecar's session.
var renewBackoff = session.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second}

var _ http.Handler = (*API)(nil)

// New opens the agent's session on cfg.Client (the first lane) and returns
// the API. It fails when the client is missing or the session cannot be
// granted (session.New's errors).
func New(ctx context.Context, cfg Config) (*API, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("%w: nil etcd client", errBadRequest)
	}
	if cfg.HeldInterval <= 0 {
		cfg.HeldInterval = DefaultHeldInterval
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.LaneIdle <= 0 {
		cfg.LaneIdle = DefaultLaneIdle
	}
	logger := cfg.Logger
	ls, err := newLanes(ctx, cfg.Client, cfg.LaneIdle, func(lease clientv3.LeaseID, err error) {
		if err != nil {
			logger.Warn("closing an idle lane failed", "lease", fmt.Sprintf("%x", int64(lease)), "err", err)
			return
		}
		logger.Debug("closed an idle lane", "lease", fmt.Sprintf("%x", int64(lease)))
	}, cfg.SessionOptions...)
	if err != nil {
		return nil, fmt.Errorf("coordapi: %w", err)
	}
	a := &API{cfg: cfg, lanes: ls}
	a.ctx, a.cancel = context.WithCancelCause(context.Background())
	a.renewing.Go(func() {
		ls.renewFirst(a.ctx, renewBackoff, func(lease clientv3.LeaseID, err error) {
			logger.Warn("session ended: a new one is granted as soon as etcd answers", "lease", fmt.Sprintf("%x", int64(lease)), "err", err)
		}, func(lease clientv3.LeaseID) {
			logger.Info("session granted anew", "lease", fmt.Sprintf("%x", int64(lease)))
		})
	})
	mux := http.NewServeMux()
	for _, rt := range routes {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rt.body && !httpguard.JSONBody(r) {
				writeError(w, http.StatusUnsupportedMediaType, CodeUnsupported, rt.method+" "+rt.path+" wants Content-Type: application/json")
				return
			}
			rt.handle(a, w, r)
		})
		mux.Handle(rt.method+" "+rt.path, h)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, "no route "+r.Method+" "+r.URL.Path+" (see GET /v1/openapi.json)")
	})
	a.handler = httpguard.Guard{Secret: cfg.Token, Name: "coordapi"}.Wrap(mux, guardError)
	return a, nil
}

// guardError is the API's answer to a request the guard refused.
func guardError(w http.ResponseWriter, status int, msg string) {
	code := CodeForbidden
	if status == http.StatusUnauthorized {
		code = CodeUnauthorized
	}
	writeError(w, status, code, msg)
}

// ServeHTTP serves the API.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !a.enter() {
		writeError(w, http.StatusServiceUnavailable, CodeShuttingDown, errShuttingDown.Error())
		return
	}
	defer a.active.Done()
	a.handler.ServeHTTP(w, r)
}

func (a *API) enter() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.active.Add(1)
	return true
}

// Close ends every hold (each is released and its stream gets "lost" with
// reason "agent shutting down") and every observe stream, waits for them,
// then closes the agent's sessions. Later requests get 503 shutting_down.
func (a *API) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.mu.Unlock()
	a.cancel(errShuttingDown)
	a.active.Wait()
	err := a.lanes.close()
	a.renewing.Wait()
	return err
}

// Routes are the http.ServeMux patterns the API serves ("POST /v1/lock",
// ...), for a server that mounts it beside routes of its own.
func (a *API) Routes() []string { return routePatterns() }

func routePatterns() []string {
	out := make([]string, len(routes))
	for i, rt := range routes {
		out[i] = rt.method + " " + rt.path
	}
	return out
}

// Lease is the lease of the agent's first session (0 while it has none).
func (a *API) Lease() clientv3.LeaseID {
	if s := a.lanes.first(); s != nil {
		return s.Lease()
	}
	return clientv3.NoLease
}

func (a *API) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}

// SessionInfo is the body of GET /v1/session.
type SessionInfo struct {
	Lease         string    `json:"lease"` // hex, as in keys
	TTLSeconds    float64   `json:"ttl_s"`
	Alive         bool      `json:"alive"`
	LeaseDeadline time.Time `json:"lease_deadline"`
	// LeaseRemainingSeconds is the time left until LeaseDeadline, for a
	// reader whose clock is not the agent's.
	LeaseRemainingSeconds float64 `json:"lease_remaining_s"`
	Lanes                 int     `json:"lanes"`
}

func (a *API) handleSession(w http.ResponseWriter, r *http.Request) {
	s := a.lanes.first()
	info := SessionInfo{Lanes: a.lanes.count()}
	if s != nil {
		info.Lease = fmt.Sprintf("%x", int64(s.Lease()))
		info.TTLSeconds = s.TTL().Seconds()
		info.Alive = s.Alive()
		info.LeaseDeadline = s.Deadline().UTC()
		info.LeaseRemainingSeconds = remaining(s.Deadline())
	}
	writeJSON(w, http.StatusOK, info)
}

// Server is the API served on a listener of its own: coordctl agent, and
// the bench and the check that serve one in their process.
type Server struct {
	*API
	// URL is http://ADDR of the listener.
	URL string
	srv *httpserve.Server
}

// Listen opens the API (New) and serves it on addr ("127.0.0.1:0": a free
// port, in URL).
func Listen(ctx context.Context, cfg Config, addr string) (*Server, error) {
	api, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = api.Close()
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	peer := cfg.PeerTimeout
	if peer == 0 {
		peer = session.DefaultTTL
	}
	return &Server{API: api, URL: "http://" + ln.Addr().String(), srv: httpserve.Start(ln, api, httpserve.PeerTimeout(peer), httpserve.Logger(cfg.Logger))}, nil
}

// Failed delivers the error of a server that stopped serving before Close.
func (s *Server) Failed() <-chan error { return s.srv.Failed() }

// Close ends the holds (API.Close: released, their streams told), then
// the listener.
func (s *Server) Close() error {
	err := s.API.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	return err
}
