// Package coordkitpy carries the Python client, coordkit.py, for the Go
// programs that run it: coordctl bench lock --against api writes it next to
// its driver and measures the coordination API through it.
package coordkitpy

import (
	_ "embed"
	"os"
	"path/filepath"
)

// Source is coordkit.py.
//
//go:embed coordkit.py
var Source []byte

// Install writes coordkit.py into dir, for a python3 started with dir on
// its path.
func Install(dir string) error {
	return os.WriteFile(filepath.Join(dir, "coordkit.py"), Source, 0o644)
}
