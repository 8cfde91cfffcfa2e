package coordapi

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/internal/nettest"
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

// While etcd does not answer, requests that come while the API is being
// opened wait for that one attempt and share its error: each answers 503
// within about one grant's timeout. They used to try in turn behind a
// lock, the last of n waiting n grants.
func TestLazyOpensOnceForConcurrentRequests(t *testing.T) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{nettest.Silent(t)}, Logger: zap.NewNop()})
	require.NoError(t, err)
	defer cli.Close()

	const grant = time.Second // the session's TTL bounds its grant
	l := NewLazy(Config{SessionOptions: []session.Option{session.WithTTL(grant)}}, func() *clientv3.Client { return cli })
	defer l.Close()
	srv := httptest.NewServer(l)
	defer srv.Close()

	const n = 4
	took := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			start := time.Now()
			resp, err := srv.Client().Get(srv.URL + "/v1/session")
			took[i] = time.Since(start)
			if err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusServiceUnavailable {
					took[i] = -1
				}
			}
		})
	}
	wg.Wait()
	for i, d := range took {
		require.NotEqual(t, time.Duration(-1), d, "request %d was not answered 503", i)
		require.Less(t, d, 2*grant+grant/2, "request %d waited for more than one attempt to open the API", i)
	}
}
