package coordapi

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/session"
)

// The sidecar's API before and after it reached etcd: 503 unavailable
// (behind the same guard) until the client exists, then the API itself on
// it; after Close, shutting_down.
func TestLazyOpensOnceTheClientExists(t *testing.T) {
	_, cli := etcd.StartWithClient(t)
	var ready atomic.Bool
	l := NewLazy(Config{SessionOptions: []session.Option{session.WithTTL(5 * time.Second)}, HeldInterval: 100 * time.Millisecond},
		func() *clientv3.Client {
			if ready.Load() {
				return cli
			}
			return nil
		})
	srv := httptest.NewServer(l)
	defer srv.Close()
	get := func(host string) *http.Request {
		req, err := http.NewRequest("GET", srv.URL+"/v1/session", nil)
		require.NoError(t, err)
		if host != "" {
			req.Host = host
		}
		return req
	}
	requireError(t, srv.Client(), get("coord.example.com"), http.StatusForbidden, CodeForbidden)
	requireError(t, srv.Client(), get(""), http.StatusServiceUnavailable, CodeUnavailable)
	require.ElementsMatch(t, routePatterns(), l.Routes())
	require.Contains(t, l.Routes(), "POST /v1/lock")

	ready.Store(true)
	a := &agent{srv: srv, cli: cli}
	h := a.open(t, "/v1/lock", map[string]any{"name": "lazy"})
	ev := h.acquired(t)
	require.Positive(t, ev.Token)

	require.NoError(t, l.Close())
	require.Contains(t, h.want(t, "lost").Reason, "shutting down")
	requireError(t, srv.Client(), get(""), http.StatusServiceUnavailable, CodeShuttingDown)
}
