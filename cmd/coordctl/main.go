// Command coordctl is the coordkit command-line tool.
package main

import (
	"os"

	"github.com/coordkit/coordkit/internal/cli"
)

func main() {
	os.Exit(cli.Main())
}
