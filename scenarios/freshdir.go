package scenarios

import (
	"fmt"
	"os"
)

// freshDir returns a new, empty directory under e.TempDir for one part of
// a run (an etcd's data, a resource's log, a SQLite file). A caller may
// give every run the same TempDir (coordctl demo --data-dir D, twice); a
// part that found an earlier run's state there — a resource's floors, a
// fence table — would refuse this run's first tokens as stale.
func (e Env) freshDir(name string) (string, error) {
	if err := os.MkdirAll(e.TempDir, 0o755); err != nil {
		return "", fmt.Errorf("run directory: %w", err)
	}
	dir, err := os.MkdirTemp(e.TempDir, name+"-")
	if err != nil {
		return "", fmt.Errorf("run directory: %w", err)
	}
	return dir, nil
}
