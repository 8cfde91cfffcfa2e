//go:build unix

package etcdembed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// dirLock is an exclusive advisory lock (flock) on DataDir/coordkit.lock,
// held for the life of a member, so that a second member on the same
// directory fails at once instead of waiting for ever on bbolt's lock inside
// embed.StartEtcd.
type dirLock struct{ f *os.File }

// lockDataDir takes the lock of dir without blocking: *DataDirInUseError
// (ErrDataDirInUse) if another process, or another member in this one, has it.
func lockDataDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, dataDirLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("etcdembed: lock data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &DataDirInUseError{Dir: dir}
		}
		return nil, fmt.Errorf("etcdembed: lock %s: %w", path, err)
	}
	return &dirLock{f: f}, nil
}

// release unlocks before it closes: a child process being started by
// another goroutine holds a copy of the descriptor until its exec, and the
// flock would last as long as that copy (see fencing's fileLock.release).
func (l *dirLock) release() {
	if l != nil {
		_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		_ = l.f.Close()
	}
}
