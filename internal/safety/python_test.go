package safety

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A short fenced run whose process clients are Python programs holding
// through the coordination API: they take the lock and write (their ops
// are in the history), and the run has no violation.
func TestRunPythonClients(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: the Python process clients run clients/python")
	}
	var progress bytes.Buffer
	cfg := Config{Target: TargetLock, Duration: 8 * time.Second, Clients: 2, TTL: 2 * time.Second, Seed: 1, Fencing: true,
		DataDir: t.TempDir(), Coordctl: "coordctl", Python: py, Progress: &progress,
		Kinds: []FaultKind{FaultSigstop}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, h, err := Run(ctx, cfg)
	require.NoError(t, err, progress.String())
	t.Logf("%+v", rep)
	require.Zero(t, rep.Violations, progress.String())
	var wrote int
	for _, op := range h.Ops {
		if op.Client == cfg.Clients+1 && op.Kind == OpWrite && op.Outcome == OK {
			wrote++
		}
	}
	require.Positive(t, wrote, "no write by a Python client: %s", progress.String())
}

func TestPythonClientsConfig(t *testing.T) {
	ok := Config{Target: TargetLock, Duration: time.Second, Clients: 2, TTL: time.Second, DataDir: "d", Coordctl: "c", Python: "python3"}
	require.NoError(t, ok.Validate())
	for name, mod := range map[string]func(*Config){
		"no process clients": func(c *Config) { c.Coordctl = "" },
		"election":           func(c *Config) { c.Target = TargetElection },
		"semaphore":          func(c *Config) { c.Kind, c.Limit = KindSemaphore, 1 },
		"sql resource":       func(c *Config) { c.Resource, c.SQLDriver = ResourceSQL, "sqlite" },
	} {
		t.Run(name, func(t *testing.T) {
			c := ok
			mod(&c)
			require.ErrorIs(t, c.Validate(), ErrBadConfig)
		})
	}
}

// Python process clients killed (SIGKILL) while they hold: each kill
// counts as applied, the agent releases the dead client's hold, so later
// Python clients still take the lock and write, and the fenced run has no
// violation. With Python clients the default faults include kill-client.
func TestRunPythonClientsKilled(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: the Python process clients run clients/python")
	}
	var progress bytes.Buffer
	cfg := Config{Target: TargetLock, Duration: 10 * time.Second, Clients: 2, TTL: 2 * time.Second, Seed: 1, Fencing: true,
		DataDir: t.TempDir(), Coordctl: "coordctl", Python: py, Progress: &progress,
		Kinds: []FaultKind{FaultKillClient}}
	require.Contains(t, Config{Target: TargetLock, Coordctl: "c", Python: py}.DefaultKinds(), FaultKillClient)
	require.NotContains(t, Config{Target: TargetLock, Coordctl: "c"}.DefaultKinds(), FaultKillClient)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, h, err := Run(ctx, cfg)
	require.NoError(t, err, progress.String())
	require.Zero(t, rep.Violations, progress.String())
	require.Positive(t, rep.Faults[string(FaultKillClient)], "no Python client killed while holding: %s", progress.String())
	require.Contains(t, progress.String(), "SIGKILL process client")
	var wrote int
	for _, op := range h.Ops {
		if op.Client == cfg.Clients+1 && op.Kind == OpWrite && op.Outcome == OK {
			wrote++
		}
	}
	require.Positive(t, wrote, "no write by a Python client: %s", progress.String())
}
