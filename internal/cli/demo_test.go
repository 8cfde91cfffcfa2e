package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDemoRunsOnEmbeddedEtcdAndCleansUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	res := runInProcess(ctx, nil, "demo", "-w", "json", "--data-dir", dir)
	require.Equal(t, exitOK, res.Code, res.Stderr)
	var rejected, lostUpdate bool
	sc := bufio.NewScanner(strings.NewReader(res.Stdout))
	for sc.Scan() {
		var step struct{ Actor, Event string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &step), sc.Text())
		rejected = rejected || step.Actor == "fenced" && step.Event == "rejected"
		lostUpdate = lostUpdate || step.Actor == "unfenced" && step.Event == "accepted"
	}
	require.True(t, rejected, "the fenced resource must reject the late write")
	require.True(t, lostUpdate, "the unfenced resource must show the lost update")
}

func TestDemoRejectsBadTTL(t *testing.T) {
	res := runInProcess(context.Background(), nil, "demo", "--ttl", "1500ms")
	require.Equal(t, exitUsage, res.Code)
	require.Contains(t, res.Stderr, "--ttl")
}
