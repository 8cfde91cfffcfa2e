//go:build unix

package fencing

import (
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestLockReleasedWhileAChildHoldsACopy: a child process started while the
// lock is held has a copy of its descriptor (here on purpose, through
// ExtraFiles; by accident between fork and exec when another goroutine starts
// a process). Release must free the lock anyway, or the next open in this
// process finds the directory "in use by another process".
func TestLockReleasedWhileAChildHoldsACopy(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "LOCK")
	l, err := lockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "60")
	child.ExtraFiles = append(child.ExtraFiles, l.f)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })

	if _, err := lockFile(path); !errors.Is(err, ErrDirInUse) {
		t.Fatalf("second lock while held: %v, want ErrDirInUse", err)
	}
	if err := l.release(); err != nil {
		t.Fatal(err)
	}
	again, err := lockFile(path)
	if err != nil {
		t.Fatalf("lock after release, with the child's copy still open: %v", err)
	}
	if err := again.release(); err != nil {
		t.Fatal(err)
	}
}
