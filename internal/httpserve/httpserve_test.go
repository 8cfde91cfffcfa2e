package httpserve

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coordkit/coordkit/internal/testio"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve starts a Server whose handler answers "ok" once release is
// closed, telling entered when a request has arrived; closed is closed
// when Shutdown has closed the listener.
func serve(t *testing.T) (s *Server, addr string, entered, release, closed chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	entered, release, closed = make(chan struct{}, 8), make(chan struct{}), make(chan struct{})
	s = Start(&notifyListener{Listener: ln, closed: closed}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "ok")
	}))
	return s, ln.Addr().String(), entered, release, closed
}

// notifyListener closes closed when it is closed.
type notifyListener struct {
	net.Listener
	once   sync.Once
	closed chan struct{}
}

func (l *notifyListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// request sends GET / on a connection of its own and returns the
// response's body or the error.
func request(addr string) (string, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// A connection that sent nothing is closed at once; net/http alone would
// count it busy for five seconds and Shutdown would fail after its ctx.
func TestShutdownClosesConnectionsWithoutARequest(t *testing.T) {
	s, addr, entered, release, _ := serve(t)
	close(release)
	quiet, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer quiet.Close()
	// The listener hands connections out in order: once a later one was
	// served, the quiet one has been accepted.
	got, err := request(addr)
	require.NoError(t, err)
	require.Equal(t, "ok", got)
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
	require.NoError(t, quiet.SetReadDeadline(time.Now().Add(time.Minute)))
	_, err = quiet.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
}

// A request in flight when Shutdown began is answered in full before
// Shutdown returns.
func TestShutdownLetsARequestInFlightFinish(t *testing.T) {
	s, addr, entered, release, closed := serve(t)
	answer := make(chan string, 1)
	go func() {
		got, err := request(addr)
		if err != nil {
			got = err.Error()
		}
		answer <- got
	}()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- s.Shutdown(context.Background()) }()
	<-closed // Shutdown is under way
	select {
	case err := <-stopped:
		t.Fatalf("Shutdown returned (%v) while a request was in flight", err)
	case got := <-answer:
		t.Fatalf("the request ended (%q) before its handler returned", got)
	default:
	}
	close(release)
	require.Equal(t, "ok", <-answer)
	require.NoError(t, <-stopped)
}

// A request still in flight when ctx ends is cut: Shutdown says so.
func TestShutdownCutsWhatOutlivesItsContext(t *testing.T) {
	s, addr, entered, release, _ := serve(t)
	answer := make(chan error, 1)
	go func() {
		_, err := request(addr)
		answer <- err
	}()
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, s.Shutdown(ctx), context.Canceled)
	require.Error(t, <-answer)
	close(release) // the handler's goroutine ends
}

// A listener that fails stops serving: Failed says why.
func TestFailedDeliversServesError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := Start(ln, http.NotFoundHandler())
	require.NoError(t, ln.Close())
	require.ErrorIs(t, <-s.Failed(), net.ErrClosed)
	require.NoError(t, s.Shutdown(context.Background()))
}

// URL shows a listener on an unspecified address as 127.0.0.1 with its
// port, which a client can dial; a specific one as it is.
func TestURL(t *testing.T) {
	for _, tc := range []struct{ listen, host string }{
		{"127.0.0.1:0", "127.0.0.1"},
		{"0.0.0.0:0", "127.0.0.1"},
		{":0", "127.0.0.1"},
	} {
		ln, err := net.Listen("tcp", tc.listen)
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		require.Equal(t, "http://"+net.JoinHostPort(tc.host, strconv.Itoa(port)), URL(ln.Addr()), tc.listen)
		require.NoError(t, ln.Close())
	}
}

// With Logger, net/http's own errors (here a handler's panic, which
// net/http recovers and logs) are lines of the command's log at WARN.
func TestLoggerTakesNetHTTPsErrors(t *testing.T) {
	var log testio.SyncBuffer
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := Start(ln, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("handler bug") }),
		Logger(slog.New(slog.NewTextHandler(&log, nil))))
	defer func() { require.NoError(t, s.Shutdown(context.Background())) }()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	_, err = c.Get(URL(ln.Addr()))
	require.Error(t, err, "a panicking handler's connection is closed without an answer")
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "handler bug") }, 5*time.Second, 10*time.Millisecond)
	require.Contains(t, log.String(), "level=WARN msg=\"http: panic serving ")
}
