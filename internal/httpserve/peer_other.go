//go:build !linux

package httpserve

import (
	"net"
	"time"
)

// setPeerTimeout does nothing here: TCP_USER_TIMEOUT is Linux's.
func setPeerTimeout(net.Conn, time.Duration) error { return nil }
