package fencing

import (
	"net"
)

// LocalServer is a Resource served over real HTTP on a free loopback port:
// the protected resource of demos, experiments and checks that run in one
// process. It is a Server; the name is kept for its callers.
type LocalServer = Server

// StartLocal opens a Resource with cfg and serves it on 127.0.0.1 with a
// port the kernel chooses.
func StartLocal(cfg ResourceConfig) (*LocalServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return Serve(ln, cfg)
}
