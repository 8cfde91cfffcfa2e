//go:build !unix

package etcdembed

import "os"

// dirLock is a no-op where flock is not available: the caller must make sure
// one member at a time uses a data directory.
type dirLock struct{}

func lockDataDir(dir string) (*dirLock, error) { return &dirLock{}, nil }

func (l *dirLock) release() {}

// tryLock takes no lock where flock is not available (nil: nothing to
// unlock); claimStablePort then counts a port as this process's alone.
func tryLock(path string, perm os.FileMode) (*os.File, error) { return nil, nil }
