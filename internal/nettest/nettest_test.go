package nettest_test

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordkit/coordkit/internal/nettest"
)

func TestClosedAddrRefuses(t *testing.T) {
	_, err := net.Dial("tcp", nettest.ClosedAddr(t))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial: %v, want connection refused", err)
	}
}

func TestSilentAcceptsAndSaysNothing(t *testing.T) {
	c, err := net.Dial("tcp", nettest.Silent(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	var ne net.Error
	if _, err := c.Read(make([]byte, 1)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read: %v, want a timeout", err)
	}
}

// ClosedAddr's ports are below the ephemeral range, which outgoing
// connections and port-0 listeners draw from.
func TestClosedAddrIsBelowTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ephemeral range to compare with: %v", err)
	}
	low, err := strconv.Atoi(strings.Fields(string(b))[0])
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		_, port, err := net.SplitHostPort(nettest.ClosedAddr(t))
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(port)
		if err != nil || n < 20000 || n >= low {
			t.Fatalf("port %s: want one in [20000, %d)", port, low)
		}
	}
}
