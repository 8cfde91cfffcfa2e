package sidecar

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/coordkit/coordkit/internal/httpserve"
)

// Serve listens on listen, calls listening with the API's URL once it
// accepts connections, serves the API and runs the sidecar until ctx ends
// or Run returns (its error: a *ChildExitError when the command exited).
// If the HTTP server fails, no probe can tell the truth any more: the
// sidecar steps down and Serve returns that error. A sidecar without a
// client makes its first attempt to connect before listening is called:
// an error that is not transient is returned then; etcd unreachable, Run
// keeps trying while the API is served.
func Serve(ctx context.Context, sc *Sidecar, listen string, listening func(url string) error) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", listen, err)
	}
	if err := sc.connectFirst(ctx); err != nil {
		ln.Close()
		return err
	}
	// A client of --api's holds that vanished ends like the sidecar's own
	// session would: about a TTL after it went silent.
	srv := httpserve.Start(ln, sc.Handler(), httpserve.PeerTimeout(sc.cfg.TTL), httpserve.Logger(sc.cfg.Logger))
	defer func() {
		sc.CloseAPI()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := listening(httpserve.URL(ln.Addr())); err != nil { // a wildcard --listen prints 127.0.0.1
		if cli := sc.etcd(); cli != nil && sc.conn != nil {
			cli.Close() // connectFirst's, which Run would have closed
		}
		return err
	}
	runErr := make(chan error, 1)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { runErr <- sc.Run(rctx) }()
	select {
	case err = <-runErr:
		return err
	case err = <-srv.Failed():
		stop()
		<-runErr
		return fmt.Errorf("http server: %w", err)
	}
}
