// Command coordctl is the coordkit command-line tool.
package main

import (
	"os"

	"github.com/coordkit/coordkit/internal/cmd/root"
)

func main() {
	os.Exit(root.Main())
}
