package sidecar

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/coordkit/coordkit/fencing"
)

// WriteTokenFile replaces the file at path with the token in decimal and a
// newline, atomically: readers see the old content or the new, never a
// part. The token is written to a temporary file in the same directory,
// stamped valid until until (StampTokenFile), synced, renamed over path,
// and the directory is synced so the rename survives a crash: the file
// appears already stamped.
func WriteTokenFile(path string, tok fencing.Token, until time.Time) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("sidecar: token file: %w", err)
	}
	tmpName := tmp.Name()
	fail := func(err error) error {
		_ = tmp.Close()
		_ = os.Remove(tmpName)
		return fmt.Errorf("sidecar: token file %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fail(err)
	}
	if _, err := tmp.WriteString(tok.String() + "\n"); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Chtimes(tmpName, time.Time{}, until); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		_ = os.Remove(tmpName)
		return fmt.Errorf("sidecar: token file %s: %w", path, err)
	}
	return syncDir(dir)
}

// StampTokenFile sets the token file's modification time to until, the
// lease's local deadline: a reader trusts the file only while its
// modification time is in the future. The sidecar removes the file when a
// leadership ends; one that died or froze cannot (its container OOM-killed
// whole, say), and the file it left then stops counting at the deadline,
// before etcd can expire the lease and elect another leader. The access
// time is left as it is.
func StampTokenFile(path string, until time.Time) error {
	if err := os.Chtimes(path, time.Time{}, until); err != nil {
		return fmt.Errorf("sidecar: token file %s: %w", path, err)
	}
	return nil
}

// RemoveTokenFile removes the token file; a missing file is not an error.
// The directory is synced so that the removal survives a crash.
func RemoveTokenFile(path string) error {
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("sidecar: remove token file: %w", err)
	}
	dir := filepath.Dir(path)
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sidecar: sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sidecar: sync directory %s: %w", dir, err)
	}
	return nil
}

// OwnTokenFile makes this process the owner of the token file at path: an
// exclusive flock on PATH.lock, held until the returned file is closed or
// the process ends (the kernel drops it even after SIGKILL). A second
// sidecar given the same --token-file would otherwise delete the leader's
// live token file at start-up, and the application would believe it does
// not lead; it gets an error wrapping ErrTokenFile instead.
func OwnTokenFile(path string) (*os.File, error) {
	lockPath := path + ".lock"
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrTokenFile, path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w %s: owned by another running sidecar (it holds %s); give each sidecar a --token-file of its own",
				ErrTokenFile, path, lockPath)
		}
		return nil, fmt.Errorf("%w %s: lock %s: %w", ErrTokenFile, path, lockPath, err)
	}
	return f, nil
}
