// Package coordkitpy carries the Python client, coordkit.py, for the Go
// programs that run it: coordctl bench lock --against api writes it next to
// its driver and measures the coordination API through it.
package coordkitpy

import _ "embed"

// Source is coordkit.py.
//
//go:embed coordkit.py
var Source []byte
