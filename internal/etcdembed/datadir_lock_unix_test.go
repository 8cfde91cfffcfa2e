//go:build unix

package etcdembed

import (
	"errors"
	"os/exec"
	"testing"
)

// TestDataDirLockReleasedWhileAChildHoldsACopy: as fencing's lock, a copy of
// the descriptor in a child process (inherited on purpose here, between fork
// and exec by accident) must not keep the directory locked after release.
func TestDataDirLockReleasedWhileAChildHoldsACopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "60")
	child.ExtraFiles = append(child.ExtraFiles, l.f)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })

	if _, err := lockDataDir(dir); !errors.Is(err, ErrDataDirInUse) {
		t.Fatalf("second lock while held: %v, want ErrDataDirInUse", err)
	}
	l.release()
	again, err := lockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after release, with the child's copy still open: %v", err)
	}
	again.release()
}
