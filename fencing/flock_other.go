//go:build !unix

package fencing

// fileLock is a no-op where flock is not available: the caller must make
// sure one process at a time uses a log.
type fileLock struct{}

func lockFile(path string) (*fileLock, error) {
	_, err := createIfMissing(path)
	return &fileLock{}, err
}

func (l *fileLock) release() error { return nil }
