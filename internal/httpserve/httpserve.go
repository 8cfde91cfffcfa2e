package httpserve

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// readHeaderTimeout bounds how long a connection may take to send a
// request's header.
const readHeaderTimeout = 10 * time.Second

// Server serves one handler on one listener until Shutdown.
type Server struct {
	http        *http.Server
	failed      chan error
	done        chan struct{}
	peerTimeout time.Duration

	mu       sync.Mutex
	fresh    map[net.Conn]struct{} // accepted, no request read yet
	stopping bool
	logger   *slog.Logger
}

// An Option configures Start.
type Option func(*Server)

// PeerTimeout ends a connection whose peer has left what the server sent
// it unacknowledged for d: a client whose machine died or whose network
// was cut, which sends no FIN or RST, as if it had closed the
// connection (its requests' contexts end). Without it such a connection
// lasts until TCP gives up retransmitting, about 15 minutes with Linux's
// defaults, and a hold streamed on it with it. Linux (TCP_USER_TIMEOUT);
// elsewhere it does nothing. A peer that is alive but does not read is
// not ended by it until the server's writes stall (its window full).
func PeerTimeout(d time.Duration) Option { return func(s *Server) { s.peerTimeout = d } }

// Logger sends net/http's own errors (a handler's panic, a failed accept
// that is retried, a header written twice) to l at level WARN, as lines of
// the command's log; without it, or with a nil l, they go to the standard
// logger.
func Logger(l *slog.Logger) Option { return func(s *Server) { s.logger = l } }

// Start serves h on ln in a goroutine of its own.
func Start(ln net.Listener, h http.Handler, opts ...Option) *Server {
	s := &Server{failed: make(chan error, 1), done: make(chan struct{}), fresh: map[net.Conn]struct{}{}}
	for _, o := range opts {
		o(s)
	}
	s.http = &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, ConnState: s.track}
	if s.logger != nil {
		s.http.ErrorLog = slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn)
	}
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
	if s.peerTimeout > 0 {
		_ = setPeerTimeout(c, s.peerTimeout) // best effort: the default is TCP's own
	}
	s.fresh[c] = struct{}{}
}

// URL is http://ADDR of a listener as a client on this machine dials it:
// an unspecified address (0.0.0.0, ::), which names no host, is shown as
// 127.0.0.1 with its port.
func URL(addr net.Addr) string {
	if ta, ok := addr.(*net.TCPAddr); ok && (ta.IP == nil || ta.IP.IsUnspecified()) {
		return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ta.Port))
	}
	return "http://" + addr.String()
}
