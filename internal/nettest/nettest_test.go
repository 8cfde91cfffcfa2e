package nettest_test

import (
	"errors"
	"net"
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
