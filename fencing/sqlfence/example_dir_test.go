package sqlfence_test

import "os"

// exampleDir is a fresh directory for Example (examples get no t.TempDir).
func exampleDir() string {
	dir, err := os.MkdirTemp("", "sqlfence-example")
	if err != nil {
		panic(err)
	}
	return dir
}
