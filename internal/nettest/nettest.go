// Package nettest gives tests the network peers that make a client fail in
// the two ways a dead server does: an address where nothing listens (the
// connection is refused at once), and a server that accepts connections and
// never answers (the client waits until its own timeout). For tests only.
package nettest

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// ClosedAddr returns a loopback host:port where nothing listens: a port
// that was free a moment ago, chosen at random below the system's
// ephemeral range. A port of that range (what a listener on port 0 gets)
// can be taken meanwhile as the source port of any outgoing connection or
// by another :0 listener, and a test that starts a server there later
// (etcd "not started yet") failed with "address already in use".
func ClosedAddr(t testing.TB) string {
	t.Helper()
	low := ephemeralLow()
	for range 100 {
		port := firstPort + rand.IntN(low-firstPort)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken
		}
		addr := l.Addr().String()
		if err := l.Close(); err != nil {
			t.Fatalf("nettest: close: %v", err)
		}
		return addr
	}
	t.Fatalf("nettest: no free port in [%d, %d) in 100 tries", firstPort, low)
	return ""
}

// firstPort is the lowest port ClosedAddr gives out: well above the
// well-known and registered services a test machine may run.
const firstPort = 20000

// ephemeralLow is the first port of Linux's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), 32768 (its default) when it
// cannot be read or leaves no room below it.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > firstPort+1000 {
				return n
			}
		}
	}
	return 32768
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
