package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScenarioCmdEndToEnd(t *testing.T) {
	t.Parallel()
	bin := coordctlBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	page := filepath.Join(t.TempDir(), "report.html")
	cmd := exec.CommandContext(ctx, bin, "scenario", "run", "lamport-clocks", "--report", page, "-w", "json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	var got map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got))
	assert.Equal(t, true, got["passed"])
	assert.Contains(t, stderr.String(), "scenario lamport-clocks: PASS")
	_, err := os.Stat(page)
	require.NoError(t, err)

	cmd = exec.CommandContext(ctx, bin, "scenario", "run", "no-such-scenario")
	stderr.Reset()
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, exitUsage, ee.ExitCode())
	assert.Contains(t, stderr.String(), "lamport-clocks")
}
