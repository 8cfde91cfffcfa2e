// Command coordkit-sidecar is coordctl's leader-election sidecar alone,
// for the slim sidecar image; see internal/cmd/sidecarroot.
package main

import (
	"os"

	"github.com/coordkit/coordkit/internal/cmd/sidecarroot"
)

func main() {
	os.Exit(sidecarroot.Main())
}
