package fencing

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// LocalServer is a Resource served over real HTTP on a free loopback port:
// the protected resource of demos, experiments and checks that run in one
// process.
type LocalServer struct {
	*Resource
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL    string
	srv    *http.Server
	served chan struct{}
}

// StartLocal opens a Resource with cfg and serves it on 127.0.0.1 with a
// port the kernel chooses.
func StartLocal(cfg ResourceConfig) (*LocalServer, error) {
	res, err := NewResource(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errors.Join(err, res.Close())
	}
	s := &LocalServer{
		Resource: res,
		URL:      "http://" + ln.Addr().String(),
		srv:      &http.Server{Handler: res, ReadHeaderTimeout: 5 * time.Second},
		served:   make(chan struct{}),
	}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Client returns a client of the server whose requests time out after timeout.
func (s *LocalServer) Client(timeout time.Duration) *Client {
	return &Client{BaseURL: s.URL, HTTP: &http.Client{Timeout: timeout}}
}

// Close shuts the HTTP server down, letting requests in flight finish for
// up to two seconds, then closes the Resource.
func (s *LocalServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	<-s.served
	return errors.Join(err, s.Resource.Close())
}
