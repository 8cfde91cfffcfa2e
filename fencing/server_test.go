package fencing_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
)

// A listener on an unspecified address is shown as 127.0.0.1 with its
// port (what a client can dial); a specific one as it is.
func TestServeURL(t *testing.T) {
	for _, tc := range []struct{ listen, host string }{
		{"127.0.0.1:0", "127.0.0.1"},
		{"0.0.0.0:0", "127.0.0.1"},
		{":0", "127.0.0.1"},
	} {
		t.Run(tc.listen, func(t *testing.T) {
			ln, err := net.Listen("tcp", tc.listen)
			require.NoError(t, err)
			port := ln.Addr().(*net.TCPAddr).Port
			s, err := fencing.Serve(ln, fencing.ResourceConfig{DataDir: t.TempDir()})
			require.NoError(t, err)
			defer s.Close()
			require.Equal(t, "http://"+net.JoinHostPort(tc.host, strconv.Itoa(port)), s.URL)
			_, err = s.Client(5*time.Second).Fence(context.Background(), 3, "s")
			require.NoError(t, err)
		})
	}
}

// Wait returns nil when its context ends and the server keeps serving
// until Shutdown; Close after Shutdown closes the Resource.
func TestServeWaitShutdownClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s, err := fencing.Serve(ln, fencing.ResourceConfig{DataDir: t.TempDir()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, s.Wait(ctx))
	c := s.Client(5 * time.Second)
	_, err = c.Put(context.Background(), "k", "v", 4, "s")
	require.NoError(t, err, "Wait does not stop the server")
	require.NoError(t, s.Shutdown(context.Background()))
	_, err = c.Get(context.Background(), "k")
	require.Error(t, err, "nothing serves after Shutdown")
	require.Equal(t, fencing.Token(4), s.Floor("s"), "the Resource is open until Close")
	require.NoError(t, s.Close())
	req := httptest.NewRequest(http.MethodPost, "/v1/fence", nil)
	req.Header.Set(fencing.HeaderToken, "5")
	req.Header.Set(fencing.HeaderScope, "s")
	rec := httptest.NewRecorder()
	s.Resource.ServeHTTP(rec, req)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code, "the Resource is closed")
}

// Wait returns the error of a server that stops serving on its own.
func TestServeWaitReturnsServeError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, ln.Close())
	s, err := fencing.Serve(ln, fencing.ResourceConfig{DataDir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	require.Error(t, s.Wait(context.Background()))
}

// A Resource that cannot open closes the listener it was given.
func TestServeClosesTheListenerOnError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, err = fencing.Serve(ln, fencing.ResourceConfig{})
	require.Error(t, err)
	_, err = ln.Accept()
	require.ErrorIs(t, err, net.ErrClosed)
}
