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
	f, err := tryLock(path, 0o600)
	if errors.Is(err, errLocked) {
		return nil, &DataDirInUseError{Dir: dir}
	}
	if err != nil {
		return nil, fmt.Errorf("etcdembed: lock data dir: %w", err)
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) release() {
	if l != nil {
		unlock(l.f)
	}
}

// tryLock opens path (made with perm if missing) and takes an exclusive
// flock on it without blocking: errLocked if another process, or another
// open file of this one, holds it. The lock lasts until unlock (or the
// process's exit).
func tryLock(path string, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, perm)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", path, errLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// unlock releases a lock of tryLock: LOCK_UN before the close, because a
// child process being started by another goroutine holds a copy of the
// descriptor until its exec, and the flock would last as long as that copy
// (see fencing's fileLock.release).
func unlock(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	_ = f.Close()
}
