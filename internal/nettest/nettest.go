// Package nettest gives tests the network peers that make a client fail in
// the two ways a dead server does: an address where nothing listens (the
// connection is refused at once), and a server that accepts connections and
// never answers (the client waits until its own timeout). For tests only.
package nettest

import (
	"net"
	"sync"
	"testing"
)

// ClosedAddr returns a loopback host:port where nothing listens: a port
// the system gave out and that was closed again.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("nettest: listen: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatalf("nettest: close: %v", err)
	}
	return addr
}

// Silent returns the loopback host:port of a server that accepts every
// connection and never reads or writes on it. The server and the
// connections it accepted are closed when the test ends.
func Silent(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("nettest: listen: %v", err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}
