//go:build unix

package fencing

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// fileLock is an exclusive advisory lock (flock) held on a file for the
// life of a DurableGuard or Resource, so two processes never append to one log.
type fileLock struct{ f *os.File }

func lockFile(path string) (*fileLock, error) {
	if _, err := createIfMissing(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked", ErrDirInUse, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &fileLock{f: f}, nil
}

// release unlocks before it closes. Closing alone is not enough: a child
// process that another goroutine is starting at that moment holds a copy of
// every descriptor from fork until exec (O_CLOEXEC closes it only at exec),
// and a flock lasts while any copy is open, so the next lockFile in this
// process could find the file still locked (TestResourceRepairCmd did, once).
// LOCK_UN drops the lock from every copy at once.
func (l *fileLock) release() error {
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	return l.f.Close()
}
