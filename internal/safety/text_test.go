package safety

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// (Moved from internal/cli's TestCheckReportSimple.)
func TestVerdictSimple(t *testing.T) {
	t.Parallel()
	r := Verdict{Report: Report{
		Check: "lock-safety", Seed: 7, Fencing: false, DurationS: 20, Ops: 100, Acquisitions: 10, Writes: 30, FinalValue: 25,
		Faults: map[string]int{"freeze-client": 1, "isolate-member": 2}, OverlappingHolders: 1, LostUpdates: 5, Violations: 1,
		Examples: []Violation{{Kind: KindLostUpdate, Detail: "write seq 9 ..."}}, Linearizable: true, Passed: true,
	}, Replay: "coordctl check lock-safety --seed 7 --no-fencing"}
	var b strings.Builder
	require.NoError(t, r.WriteSimple(&b))
	for _, want := range []string{"lock-safety: PASSED", "fencing OFF", "seed 7", "freeze-client=1 isolate-member=2",
		"lost updates:        5", "lost-update: write seq 9", "linearizable:        yes", "replay: coordctl check lock-safety --seed 7 --no-fencing"} {
		require.Contains(t, b.String(), want)
	}
	js, err := json.Marshal(r)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(js, &m))
	for _, k := range []string{"check", "seed", "fencing", "duration_s", "ops", "acquisitions", "faults", "stale_rejected",
		"overlapping_holders", "lost_updates", "violations", "linearizable", "passed"} {
		require.Contains(t, m, k)
	}
	require.NotContains(t, m, "Replay")
}

func TestReplayCommand(t *testing.T) {
	t.Parallel()
	base := Config{Target: TargetLock, Duration: 20 * time.Second, Clients: 5, TTL: 2 * time.Second, Coordctl: "coordctl", Kind: KindMutex, Lock: LockCoordkit, Resource: ResourceHTTP}
	for name, tc := range map[string]struct {
		mod  func(c *Config)
		want string
	}{
		"unfenced":   {func(c *Config) {}, " --no-fencing"},
		"fenced":     {func(c *Config) { c.Fencing = true }, ""},
		"semaphore":  {func(c *Config) { c.Fencing, c.Kind, c.Limit = true, KindSemaphore, 3 }, " --kind semaphore --limit 3"},
		"redsync":    {func(c *Config) { c.Fencing, c.Lock, c.RedisAddr = true, LockRedsync, "r:1" }, " --lock redsync --redis r:1"},
		"pg":         {func(c *Config) { c.Fencing, c.Lock, c.SQLDSN = true, LockPGAdvisory, "secret" }, " --lock pg-advisory --dsn DSN"},
		"sql":        {func(c *Config) { c.Fencing, c.Resource, c.SQLDriver, c.SQLDSN = true, ResourceSQL, "mysql", "secret" }, " --resource sql --driver mysql --dsn DSN"},
		"policy":     {func(c *Config) { c.Fencing, c.Target, c.Kind, c.Policy = true, TargetElection, "", "priority" }, " --policy priority"},
		"fence last": {func(c *Config) { c.Fencing, c.NoFenceFirst, c.Coordctl = true, true, "" }, " --no-fence-first --process-clients=false"},
	} {
		c := base
		tc.mod(&c)
		want := "coordctl check " + string(c.Target) + "-safety --duration 20s --clients 5 --ttl 2s --seed 3" + tc.want
		require.Equal(t, want, ReplayCommand(c, 3), name)
	}
}

// (Moved from internal/cli's TestCheckRowSimple.)
func TestRowSimple(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(TableHeader())
	r := Row{Report{Seed: 4, Lock: LockRedsync, Kind: KindMutex, Mode: ModeIfMatch, Acquisitions: 12,
		OverlappingHolders: 2, MaxHolders: 1, Faults: map[string]int{"freeze-client": 3}, Passed: true}}
	require.NoError(t, r.WriteSimple(&b))
	require.NoError(t, Summary{Runs: 3, Faults: 9, Effective: 4, Violations: 1, Failed: 1}.WriteSimple(&b))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 3)
	require.Equal(t, []string{"seed", "lock", "kind", "mode", "acquired", "overlapping", "lost", "holders", "faults", "frozen", "violations", "verdict"}, strings.Fields(lines[0]))
	require.Equal(t, []string{"4", "redsync", "mutex", "if-match", "12", "2", "0", "1", "3", "3", "0", "passed"}, strings.Fields(lines[1]))
	require.Contains(t, lines[2], "3 runs, 1 failed, 9 faults (4 effective), 1 violations")
}
