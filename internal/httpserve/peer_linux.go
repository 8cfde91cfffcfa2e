package httpserve

import (
	"math"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// setPeerTimeout sets TCP_USER_TIMEOUT on c: the kernel closes the
// connection once data sent on it (or a keepalive probe) has gone
// unacknowledged for d, and reads and writes on it fail with ETIMEDOUT.
func setPeerTimeout(c net.Conn, d time.Duration) error {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	ms := min(d.Milliseconds(), math.MaxInt32) // the kernel takes an int of milliseconds
	var serr error
	err = raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(ms))
	})
	if err != nil {
		return err
	}
	return serr
}
