package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/scenarios/report"
	"github.com/coordkit/coordkit/scenarios/report/reporttest"
)

func TestScenarioRegistry(t *testing.T) {
	r := NewRegistry()
	run := func(context.Context, Env) (*report.Report, error) { return report.New("x", ""), nil }
	require.NoError(t, r.Register(Scenario{Name: "b", Claims: []string{"1", "2"}, Run: run}))
	require.NoError(t, r.Register(Scenario{Name: "a", Claims: []string{"1", "2"}, Run: run}))
	assert.ErrorIs(t, r.Register(Scenario{Name: "a", Claims: []string{"1", "2"}, Run: run}), ErrDuplicate)
	assert.ErrorIs(t, r.Register(Scenario{Name: "c", Claims: []string{"1"}, Run: run}), ErrInvalid)
	assert.ErrorIs(t, r.Register(Scenario{Name: "", Claims: []string{"1", "2"}, Run: run}), ErrInvalid)
	assert.ErrorIs(t, r.Register(Scenario{Name: "d", Claims: []string{"1", "2"}}), ErrInvalid)
	assert.Equal(t, []string{"a", "b"}, r.Names())
	assert.Equal(t, "b", r.List()[0].Name, "List keeps registration order")

	_, err := r.Run(context.Background(), "zz", Env{})
	var ue *UnknownError
	require.ErrorAs(t, err, &ue)
	assert.ErrorIs(t, err, ErrUnknownScenario)
	assert.Equal(t, []string{"a", "b"}, ue.Known)

	rep, err := r.Run(context.Background(), "a", Env{Seed: 7})
	require.NoError(t, err)
	assert.Equal(t, "a", rep.Name)
	assert.Equal(t, int64(7), rep.Seed)
	assert.Equal(t, "small", rep.Scale)
	assert.False(t, rep.Passed, "a report without claims does not pass")

	_, err = r.Run(context.Background(), "a", Env{Scale: "huge"})
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestScenarioRegistryRunError(t *testing.T) {
	r := NewRegistry()
	boom := errors.New("boom")
	r.MustRegister(Scenario{Name: "x", Claims: []string{"1", "2"}, Run: func(context.Context, Env) (*report.Report, error) { return nil, boom }})
	_, err := r.Run(context.Background(), "x", Env{})
	assert.ErrorIs(t, err, boom)
}

func TestScenarioDefaultRegistry(t *testing.T) {
	a, b := Default(), Default()
	require.NotSame(t, a, b)
	for _, s := range a.List() {
		assert.NotEmpty(t, s.Summary, s.Name)
		assert.GreaterOrEqual(t, len(s.Claims), 2, s.Name)
	}
}

// runScenario runs one scenario of the default registry at small scale and
// checks what every report must have.
func runScenario(t *testing.T, name string, timeout time.Duration) *report.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var progress bytes.Buffer
	rep, err := Default().Run(ctx, name, Env{Seed: 1, Scale: ScaleSmall, TempDir: t.TempDir(), Progress: &progress})
	require.NoError(t, err)
	for _, c := range rep.Claims {
		assert.True(t, c.Holds, "claim %q: expected %s, observed %s", c.Claim, c.Expected, c.Observed)
	}
	assert.GreaterOrEqual(t, len(rep.Claims), 2)
	assert.True(t, rep.Passed)
	var text, page bytes.Buffer
	require.NoError(t, report.WriteText(&text, rep))
	require.NoError(t, report.WriteHTML(&page, name, []*report.Report{rep}))
	reporttest.CheckHTML(t, page.Bytes())
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"passed":true`)
	if dir := os.Getenv("SCENARIO_SHOW"); dir != "" {
		// For a look while developing: SCENARIO_SHOW=/tmp go test -run X -v
		t.Logf("report:\n%s", text.String())
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".html"), page.Bytes(), 0o644))
	}
	if t.Failed() {
		t.Logf("report:\n%s\nprogress:\n%s", text.String(), progress.String())
	}
	return rep
}

func TestScenarioLamportClocks(t *testing.T) {
	rep := runScenario(t, "lamport-clocks", 30*time.Second)
	v, _ := rep.Metrics.Get("order_violations")
	assert.Zero(t, v)
	assert.Len(t, rep.Claims, 4)
}

func TestScenarioLamportUniqueness(t *testing.T) {
	rep := runScenario(t, "lamport-uniqueness", 60*time.Second)
	require.Len(t, rep.Claims, 4)
	require.NotNil(t, rep.Timeline)
	v, _ := rep.Metrics.Get("cas_rounds_with_one_winner")
	assert.Equal(t, 20.0, v)
}

func TestScenarioLockWithoutFencing(t *testing.T) {
	rep := runScenario(t, "lock-without-fencing", 60*time.Second)
	require.Len(t, rep.Claims, 4)
	a, _ := rep.Metrics.Get("token_a")
	b, _ := rep.Metrics.Get("token_b")
	assert.Greater(t, b, a)
}

func TestScenarioStaleRead(t *testing.T) {
	rep := runScenario(t, "stale-read", 60*time.Second)
	require.Len(t, rep.Claims, 4)
	require.NotNil(t, rep.Timeline)
	assert.Len(t, rep.Timeline.Lanes, 3)
}

func TestScenarioQuorumLoss(t *testing.T) {
	rep := runScenario(t, "quorum-loss", 60*time.Second)
	require.Len(t, rep.Claims, 5)
}

func TestScenarioMinorityPartition(t *testing.T) {
	rep := runScenario(t, "minority-partition", 60*time.Second)
	require.Len(t, rep.Claims, 5)
}

func TestScenarioEvenSplit(t *testing.T) {
	rep := runScenario(t, "even-split", 90*time.Second)
	require.Len(t, rep.Claims, 4)
	require.Len(t, rep.Tables, 1)
	assert.Len(t, rep.Tables[0].Rows, 7)
}

func TestScenarioWriteCost(t *testing.T) {
	rep := runScenario(t, "write-cost", 90*time.Second)
	require.Len(t, rep.Claims, 3)
	require.Len(t, rep.Charts, 2)
}

func TestScenarioTwoDC(t *testing.T) {
	rep := runScenario(t, "two-dc", 60*time.Second)
	require.Len(t, rep.Claims, 3)
}

func TestScenarioReadLadder(t *testing.T) {
	rep := runScenario(t, "read-ladder", 60*time.Second)
	require.Len(t, rep.Claims, 4)
}

func TestScenarioTwoPhaseCommit(t *testing.T) {
	rep := runScenario(t, "two-phase-commit", 60*time.Second)
	require.Len(t, rep.Claims, 4)
}

func TestScenarioLeaderFailover(t *testing.T) {
	rep := runScenario(t, "leader-failover", 60*time.Second)
	require.Len(t, rep.Claims, 4)
}
