package sidecar

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// A standby sidecar may run for weeks before it wins; a token file it
// cannot write or a command it cannot start would then leave the election
// without a leader. New checks both at start, and the CLI before it dials
// etcd, so that they fail before the sidecar reports ready.

// CheckTokenFile checks that the token file at path can be written the way
// WriteTokenFile writes it: it creates and removes a temporary file in the
// same directory, and refuses a path that is a directory. Its error wraps
// ErrTokenFile.
func CheckTokenFile(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%w %s: is a directory", ErrTokenFile, path)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".check-*")
	if err != nil {
		return fmt.Errorf("%w %s: cannot create a file in %s: %w", ErrTokenFile, path, dir, err)
	}
	name := tmp.Name()
	cerr := tmp.Close()
	rerr := os.Remove(name)
	if cerr != nil || rerr != nil {
		return fmt.Errorf("%w %s: %w", ErrTokenFile, path, firstErr(cerr, rerr))
	}
	return nil
}

// CheckCommand checks that argv[0] is found (in $PATH when it has no slash)
// and is executable, as exec.LookPath does; its error wraps ErrCommand and
// the cause (exec.ErrNotFound, fs.ErrNotExist, fs.ErrPermission).
func CheckCommand(argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("%w: empty command", ErrCommand)
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return fmt.Errorf("%w: %w", ErrCommand, err)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
