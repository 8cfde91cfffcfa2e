package faultctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/coordkit/coordkit/internal/etcdembed"
)

// Cluster is what the API controls; *etcdembed.Cluster implements it.
type Cluster interface {
	StopMember(n int) error
	StartMember(ctx context.Context, n int) error
	Isolate(n int) error
	BlackholeClient(n int) error
	DelayLink(from, to int, d time.Duration) error
	CutLink(from, to int) error
	Heal()
	Status() etcdembed.ClusterStatus
}

var _ Cluster = (*etcdembed.Cluster)(nil)

// StartTimeout bounds how long POST /v1/members/{n}/start waits for the member.
const StartTimeout = 30 * time.Second

type errorBody struct {
	Error string `json:"error"`
}

// NewHandler returns the HTTP API over c.
func NewHandler(c Cluster) http.Handler {
	mux := http.NewServeMux()
	member := func(fn func(r *http.Request, n int) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			n, err := strconv.Atoi(r.PathValue("n"))
			if err != nil {
				writeErr(w, http.StatusBadRequest, fmt.Errorf("bad member %q: want a number", r.PathValue("n")))
				return
			}
			if err := fn(r, n); err != nil {
				writeErr(w, statusOf(err), err)
				return
			}
			writeJSON(w, http.StatusOK, c.Status())
		}
	}
	mux.HandleFunc("POST /v1/members/{n}/stop", member(func(_ *http.Request, n int) error { return c.StopMember(n) }))
	mux.HandleFunc("POST /v1/members/{n}/start", member(func(r *http.Request, n int) error {
		ctx, cancel := context.WithTimeout(r.Context(), StartTimeout)
		defer cancel()
		return c.StartMember(ctx, n)
	}))
	mux.HandleFunc("POST /v1/members/{n}/isolate", member(func(_ *http.Request, n int) error { return c.Isolate(n) }))
	mux.HandleFunc("POST /v1/clients/{n}/blackhole", member(func(_ *http.Request, n int) error { return c.BlackholeClient(n) }))
	link := func(keys []string, fn func(vals []int) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			vals := make([]int, len(keys))
			for i, k := range keys {
				v, err := strconv.Atoi(q.Get(k))
				if err != nil || v < 0 {
					writeErr(w, http.StatusBadRequest, fmt.Errorf("bad %s=%q: want a non-negative number", k, q.Get(k)))
					return
				}
				vals[i] = v
			}
			if err := fn(vals); err != nil {
				writeErr(w, statusOf(err), err)
				return
			}
			writeJSON(w, http.StatusOK, c.Status())
		}
	}
	mux.HandleFunc("POST /v1/links/delay", link([]string{"from", "to", "ms"}, func(v []int) error {
		return c.DelayLink(v[0], v[1], time.Duration(v[2])*time.Millisecond)
	}))
	mux.HandleFunc("POST /v1/links/cut", link([]string{"from", "to"}, func(v []int) error { return c.CutLink(v[0], v[1]) }))
	mux.HandleFunc("POST /v1/heal", func(w http.ResponseWriter, r *http.Request) {
		c.Heal()
		writeJSON(w, http.StatusOK, c.Status())
	})
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, c.Status())
	})
	return mux
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, etcdembed.ErrNoMember):
		return http.StatusNotFound
	case errors.Is(err, etcdembed.ErrMemberRunning), errors.Is(err, etcdembed.ErrMemberStopped):
		return http.StatusConflict
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	case errors.Is(err, etcdembed.ErrClusterClosed):
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

func writeErr(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, errorBody{Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Server serves the API on a TCP address until Close.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// Serve listens on addr (host:port; port 0 picks one) and serves the API.
func Serve(addr string, c Cluster) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("faultctl: listen on %s: %w", addr, err)
	}
	s := &Server{srv: &http.Server{Handler: NewHandler(c), ReadHeaderTimeout: 5 * time.Second}, ln: ln, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// URL returns http://host:port of the server.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the server and waits for it.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}

// RunCluster starts cfg's cluster (etcdembed.StartCluster), serves its
// control API on addr, calls ready with the cluster's client endpoints and
// the API's URL, and runs until ctx ends: it returns nil then, also when
// ctx ended the start, and ready's error when ready fails. Everything it
// started is stopped when it returns.
func RunCluster(ctx context.Context, cfg etcdembed.ClusterConfig, addr string, ready func(endpoints []string, controlURL string) error) error {
	c, err := etcdembed.StartCluster(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer c.Close()
	ctl, err := Serve(addr, c)
	if err != nil {
		return err
	}
	defer ctl.Close()
	if err := ready(c.Endpoints(), ctl.URL()); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}
