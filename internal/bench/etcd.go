package bench

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/coordkit/coordkit/internal/etcdembed"
)

// StartEtcd starts the embedded single-member etcd a benchmark measures on,
// in a new temporary directory, fsyncing unless noFsync, and says so on
// progress (nil: nothing). The returned stop closes the member and removes
// the directory. name ("lock", "sem", ...) names the directory and errors.
func StartEtcd(ctx context.Context, name string, noFsync bool, progress io.Writer) (*etcdembed.Server, func(), error) {
	dir, err := os.MkdirTemp("", "coordctl-bench-"+name+"-")
	if err != nil {
		return nil, nil, err
	}
	if progress != nil {
		fmt.Fprintf(progress, "bench %s: starting embedded etcd in %s (fsync %v)\n", name, dir, !noFsync)
	}
	srv, err := etcdembed.Start(ctx, etcdembed.Config{DataDir: dir, UnsafeNoFsync: noFsync})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("bench %s: start etcd: %w", name, err)
	}
	return srv, func() { srv.Close(); os.RemoveAll(dir) }, nil
}
