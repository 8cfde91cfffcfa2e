// Command mkimage builds the OCI image of coordctl or coordkit-sidecar without a daemon or a
// registry (`make image`); see internal/image.
package main

import (
	"os"

	"github.com/coordkit/coordkit/internal/image"
)

func main() { os.Exit(image.Main(os.Args[1:], os.Stdout, os.Stderr)) }
