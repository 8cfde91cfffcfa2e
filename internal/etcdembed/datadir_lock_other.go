//go:build !unix

package etcdembed

// dirLock is a no-op where flock is not available: the caller must make sure
// one member at a time uses a data directory.
type dirLock struct{}

func lockDataDir(dir string) (*dirLock, error) { return &dirLock{}, nil }

func (l *dirLock) release() {}
