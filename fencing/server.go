package fencing

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Server is a Resource served over HTTP on a listener by net/http's
// Server: StartLocal on a free loopback port, for demos, experiments and
// checks in one process. (coordctl resource serve serves a Resource with
// its own server, which also ends at once the connections that have sent
// no request: net/http's Shutdown counts those busy for five seconds,
// golang/go#22682, so Shutdown here can wait that long for one.)
type Server struct {
	*Resource
	// URL is the server's base URL, http://HOST:PORT. A listener on an
	// unspecified address (0.0.0.0, ::), which no client can dial, is shown
	// as 127.0.0.1 with its port.
	URL      string
	srv      *http.Server
	served   chan struct{}
	serveErr error
}

// Serve opens a Resource with cfg and serves it on ln until Shutdown or
// Close. Bind ln before calling it, so that a busy port does not leave a new
// data directory and log behind. cfg.Logger, if set, also receives the HTTP
// server's own errors. On error ln is closed.
func Serve(ln net.Listener, cfg ResourceConfig) (*Server, error) {
	res, err := NewResource(cfg)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	s := &Server{
		Resource: res,
		URL:      "http://" + shownAddr(ln.Addr()),
		srv:      &http.Server{Handler: res, ReadHeaderTimeout: 10 * time.Second},
		served:   make(chan struct{}),
	}
	if cfg.Logger != nil {
		s.srv.ErrorLog = slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)
	}
	go func() {
		defer close(s.served)
		s.serveErr = s.srv.Serve(ln)
	}()
	return s, nil
}

// shownAddr is addr as a client dials it: an unspecified IP becomes 127.0.0.1.
func shownAddr(addr net.Addr) string {
	if ta, ok := addr.(*net.TCPAddr); ok && (ta.IP == nil || ta.IP.IsUnspecified()) {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(ta.Port))
	}
	return addr.String()
}

// Wait blocks until ctx is done, then returns nil, or until serving fails,
// then returns its error. It does not stop the server.
func (s *Server) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-s.served:
		return s.serveErr
	}
}

// Shutdown stops the HTTP server, letting requests in flight finish until
// ctx ends, then closing what is left; it returns the error of the graceful
// part. The Resource stays open until Close.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-s.served
	return err
}

// Client returns a client of the server whose requests time out after timeout.
func (s *Server) Client(timeout time.Duration) *Client {
	return &Client{BaseURL: s.URL, HTTP: &http.Client{Timeout: timeout}}
}

// Close shuts the HTTP server down, letting requests in flight finish for
// up to two seconds, then closes the Resource. It may follow Shutdown.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return errors.Join(s.Shutdown(ctx), s.Resource.Close())
}
