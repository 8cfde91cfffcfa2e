package faultproxy

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

func TestProxyDirectedFaults(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("X-Server-From"))
		mu.Unlock()
	}))
	defer target.Close()
	faults := NewFaults(3)
	ids := SenderMap{"aa": 1, "bb": 2}
	p, err := Start("127.0.0.1:0", strings.TrimPrefix(target.URL, "http://"), 3, ids, faults)
	require.NoError(t, err)
	defer p.Close()
	addr := p.Addr()

	require.True(t, askThrough(t, addr, "aa"))
	mu.Lock()
	require.Equal(t, []string{"aa"}, seen, "the request reaches the member unchanged")
	mu.Unlock()

	faults.SetCut(1, 3)
	require.False(t, askThrough(t, addr, "aa"), "1→3 cut: the request is held")
	require.True(t, askThrough(t, addr, "bb"), "2→3 is not cut")
	require.True(t, askThrough(t, addr, ""), "an unnamed dialer is cut only if every link into 3 is")

	faults.Heal()
	faults.SetCut(3, 2)
	require.False(t, askThrough(t, addr, "bb"), "3→2 cut: the answer is held")
	require.True(t, askThrough(t, addr, "aa"))

	faults.Heal()
	faults.SetIsolated(3)
	require.False(t, askThrough(t, addr, "aa"))
	require.False(t, askThrough(t, addr, ""))
	faults.Heal()

	faults.SetDelay(1, 3, 100*time.Millisecond)
	start := time.Now()
	require.True(t, askThrough(t, addr, "aa"))
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	cut, d, _ := faults.get(0, 3)
	require.False(t, cut)
	require.Equal(t, 100*time.Millisecond, d)
	require.Equal(t, []Fault{{Kind: "delay", From: 1, To: 3, Ms: 100}}, faults.Links())
}

func TestProxyHoldsThroughACut(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer target.Close()
	faults := NewFaults(2)
	p, err := Start("127.0.0.1:0", strings.TrimPrefix(target.URL, "http://"), 2, SenderMap{"aa": 1}, faults)
	require.NoError(t, err)
	defer p.Close()
	faults.SetIsolated(2)
	conn, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "GET /x HTTP/1.1\r\nHost: x\r\nX-Server-From: aa\r\n\r\n")
	require.NoError(t, err)
	time.AfterFunc(200*time.Millisecond, faults.Heal)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "the request held during the cut is delivered after it")
	resp.Body.Close()
	require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
}
