package coordapi

import (
	"context"
	"errors"
	"net/http"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/httpguard"
)

// Lazy is the API for a server that has no etcd client yet: the agent and
// the sidecar (coordctl sidecar --api), which serve before they have
// reached etcd and keep trying. Until Client returns one, every route
// answers 503 "unavailable"; then Open, or the first request, opens the API
// (New) on it, and an Open or a request whose New fails gets that error and
// leaves the next to try again. Config.Client is ignored: Client gives it.
type Lazy struct {
	cfg    Config
	client func() *clientv3.Client
	guard  http.Handler

	mu      sync.Mutex
	api     *API
	closed  bool
	opening *openAttempt // the one New in progress, nil when none
}

// openAttempt is one New of the API: the requests that come while it runs
// wait for it (each until its own context ends) and share its error.
type openAttempt struct {
	done chan struct{}
	err  error
}

// NewLazy returns the API on the client that client returns once it
// returns one (nil: not yet).
func NewLazy(cfg Config, client func() *clientv3.Client) *Lazy {
	l := &Lazy{cfg: cfg, client: client}
	l.guard = httpguard.Guard{Secret: cfg.Token, Name: "coordapi"}.Wrap(http.HandlerFunc(l.serve), guardError)
	return l
}

var errConnecting = errors.New("connecting to etcd: the coordination API opens once etcd is reached")

// ServeHTTP serves the API once it could be opened.
func (l *Lazy) ServeHTTP(w http.ResponseWriter, r *http.Request) { l.guard.ServeHTTP(w, r) }

func (l *Lazy) serve(w http.ResponseWriter, r *http.Request) {
	api, err := l.open(r.Context())
	switch {
	case errors.Is(err, errShuttingDown):
		writeError(w, http.StatusServiceUnavailable, CodeShuttingDown, err.Error())
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, err.Error())
	default:
		api.ServeHTTP(w, r)
	}
}

// Open returns the API, opening it on Client's client first if need be
// (the agent, once connected, so that it can say its lease): an error
// when Client returns nil, when New fails, or after Close.
func (l *Lazy) Open(ctx context.Context) (*API, error) { return l.open(ctx) }

// open returns the API, opening it first if need be. One New runs at a
// time, outside l.mu (its grant waits up to the session's TTL while etcd
// does not answer): the requests that come meanwhile wait for it and get
// its error, instead of each trying in turn behind the lock.
func (l *Lazy) open(ctx context.Context) (*API, error) {
	l.mu.Lock()
	switch {
	case l.closed:
		l.mu.Unlock()
		return nil, errShuttingDown
	case l.api != nil:
		api := l.api
		l.mu.Unlock()
		return api, nil
	case l.opening != nil:
		a := l.opening
		l.mu.Unlock()
		select {
		case <-a.done:
			if a.err != nil {
				return nil, a.err
			}
			return l.open(ctx)
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	cli := l.client()
	if cli == nil {
		l.mu.Unlock()
		return nil, errConnecting
	}
	a := &openAttempt{done: make(chan struct{})}
	l.opening = a
	l.mu.Unlock()

	cfg := l.cfg
	cfg.Client = cli
	// Not ctx's end: the waiting requests share this attempt.
	api, err := New(context.WithoutCancel(ctx), cfg)
	l.mu.Lock()
	l.opening = nil
	switch {
	case err != nil:
	case l.closed:
		_ = api.Close()
		api, err = nil, errShuttingDown
	default:
		l.api = api
	}
	a.err = err
	close(a.done)
	l.mu.Unlock()
	return api, err
}

// Routes are the API's routes (API.Routes).
func (l *Lazy) Routes() []string { return routePatterns() }

// Close closes the API if it was opened (API.Close); later requests get
// 503 shutting_down.
func (l *Lazy) Close() error {
	l.mu.Lock()
	l.closed = true
	api := l.api
	l.mu.Unlock()
	if api == nil {
		return nil
	}
	return api.Close()
}
