package httpserve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// readHeaderTimeout bounds how long a connection may take to send a
// request's header.
const readHeaderTimeout = 10 * time.Second

// Server serves one handler on one listener until Shutdown.
type Server struct {
	http   *http.Server
	failed chan error
	done   chan struct{}

	mu       sync.Mutex
	fresh    map[net.Conn]struct{} // accepted, no request read yet
	stopping bool
}

// Start serves h on ln in a goroutine of its own.
func Start(ln net.Listener, h http.Handler) *Server {
	s := &Server{failed: make(chan error, 1), done: make(chan struct{}), fresh: map[net.Conn]struct{}{}}
	s.http = &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, ConnState: s.track}
	go func() {
		defer close(s.done)
		if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.failed <- err
		}
	}()
	return s
}

// Failed delivers the error that stopped serving before Shutdown.
func (s *Server) Failed() <-chan error { return s.failed }

// Shutdown stops accepting, closes the connections that have sent no
// request, lets requests in flight finish until ctx ends and closes what
// is left then. It returns once serving has stopped: nil, or ctx's error
// when requests were cut short.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.stopping = true
	for c := range s.fresh {
		c.Close()
	}
	s.mu.Unlock()
	err := s.http.Shutdown(ctx)
	if err != nil {
		_ = s.http.Close()
	}
	<-s.done
	return err
}

// track keeps the connections that have sent no request, and closes one
// accepted after Shutdown began.
func (s *Server) track(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st != http.StateNew {
		delete(s.fresh, c)
		return
	}
	if s.stopping {
		c.Close()
		return
	}
	s.fresh[c] = struct{}{}
}
