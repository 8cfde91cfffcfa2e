package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// coordctl sql ... | true: stdout is a pipe nobody reads when the result is
// printed. The commit happened, so the exit must be 0 (and the floor
// moved), not death by SIGPIPE (141 in a shell), which a caller would read
// as a failure and retry (issue 25, adv3).
func TestSQLE2EClosedStdoutKeepsTheExitOfTheOutcome(t *testing.T) {
	bin := coordctlBinary(t)
	db := filepath.Join(t.TempDir(), "app.db")
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, r.Close()) // nobody reads: the first write gets EPIPE/SIGPIPE
	defer w.Close()
	var stderr strings.Builder
	cmd := exec.Command(bin, "sql", "--driver", "sqlite", "--dsn", db, "--scope", "s", "--token", "7",
		"-e", "CREATE TABLE IF NOT EXISTS t (n INTEGER)")
	cmd.Stdout = w
	cmd.Stderr = &stderr
	err = cmd.Run()
	require.NoError(t, err, "stderr: %s", stderr.String())
	out, err := exec.Command(bin, "sql", "floor", "--driver", "sqlite", "--dsn", db, "--scope", "s").Output()
	require.NoError(t, err)
	require.Contains(t, string(out), "7")
}
