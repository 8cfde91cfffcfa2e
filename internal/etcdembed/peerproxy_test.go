package etcdembed

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// askThrough sends one request through the proxy as member `from` (0: no
// X-Server-From) and reports whether an answer came back in time.
func askThrough(t *testing.T, addr string, fromID string) bool {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	hdr := ""
	if fromID != "" {
		hdr = "X-Server-From: " + fromID + "\r\n"
	}
	_, err = fmt.Fprintf(conn, "GET /probe HTTP/1.1\r\nHost: x\r\n%s\r\n", hdr)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func TestClusterPeerProxyDirectedFaults(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("X-Server-From"))
		mu.Unlock()
	}))
	defer target.Close()
	faults := newLinkFaults(3)
	ids := map[string]int{"aa": 1, "bb": 2}
	p, err := startPeerProxy("127.0.0.1:0", strings.TrimPrefix(target.URL, "http://"), 3, ids, faults)
	require.NoError(t, err)
	defer p.Close()
	addr := p.ln.Addr().String()

	require.True(t, askThrough(t, addr, "aa"))
	mu.Lock()
	require.Equal(t, []string{"aa"}, seen, "the request reaches the member unchanged")
	mu.Unlock()
	set := func(fn func()) {
		faults.mu.Lock()
		defer faults.mu.Unlock()
		fn()
	}

	set(func() { faults.cut[link{1, 3}] = true })
	require.False(t, askThrough(t, addr, "aa"), "1→3 cut: the request is dropped")
	require.True(t, askThrough(t, addr, "bb"), "2→3 is not cut")
	require.True(t, askThrough(t, addr, ""), "an unnamed dialer is cut only if every link into 3 is")

	set(func() { clear(faults.cut) })
	set(func() { faults.cut[link{3, 2}] = true })
	require.False(t, askThrough(t, addr, "bb"), "3→2 cut: the answer is dropped")
	require.True(t, askThrough(t, addr, "aa"))

	set(func() { clear(faults.cut) })
	set(func() { faults.isolated[3] = true })
	require.False(t, askThrough(t, addr, "aa"))
	require.False(t, askThrough(t, addr, ""))
	set(func() { clear(faults.isolated) })

	set(func() { faults.delay[link{1, 3}] = 100 * time.Millisecond })
	start := time.Now()
	require.True(t, askThrough(t, addr, "aa"))
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	cut, d := faults.get(0, 3)
	require.False(t, cut)
	require.Equal(t, 100*time.Millisecond, d)
	require.Equal(t, []LinkFault{{Kind: "delay", From: 1, To: 3, Ms: 100}}, faults.links())
}
