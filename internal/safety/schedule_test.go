package safety

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSafetySchedule(t *testing.T) {
	kinds := []FaultKind{FaultIsolateMember, FaultIsolateLeader, FaultCutClient, FaultStopMember, FaultFreezeClient}
	a := Schedule(7, kinds, 3, 5, 2*time.Second, 60*time.Second)
	require.Equal(t, a, Schedule(7, kinds, 3, 5, 2*time.Second, 60*time.Second), "a seed replays")
	require.NotEqual(t, a, Schedule(8, kinds, 3, 5, 2*time.Second, 60*time.Second))
	var total time.Duration
	for i, s := range a {
		total += s.Hold + s.Quiet
		require.GreaterOrEqual(t, s.Member, 1)
		require.LessOrEqual(t, s.Member, 3)
		require.GreaterOrEqual(t, s.Client, 1)
		require.LessOrEqual(t, s.Client, 5)
		if s.Kind == FaultFreezeClient {
			require.Greater(t, s.Hold, 2*time.Second, "a freeze must outlast the TTL")
		}
		// Every round of len(kinds) steps has each kind once.
		if i%len(kinds) == len(kinds)-1 {
			seen := map[FaultKind]bool{}
			for _, x := range a[i-len(kinds)+1 : i+1] {
				seen[x.Kind] = true
			}
			require.Len(t, seen, len(kinds))
		}
	}
	require.GreaterOrEqual(t, total, 60*time.Second)
	require.Less(t, total-a[len(a)-1].Hold-a[len(a)-1].Quiet, 60*time.Second, "no step more than needed")
	require.Nil(t, Schedule(1, nil, 3, 5, time.Second, time.Minute))
}

func TestSafetyConfigValidate(t *testing.T) {
	ok := Config{Target: TargetLock, Duration: time.Second, Clients: 2, TTL: time.Second, DataDir: "x"}
	require.NoError(t, ok.Validate())
	for name, mut := range map[string]func(*Config){
		"target":   func(c *Config) { c.Target = "x" },
		"duration": func(c *Config) { c.Duration = 0 },
		"clients":  func(c *Config) { c.Clients = 1 },
		"ttl":      func(c *Config) { c.TTL = time.Millisecond },
		"dir":      func(c *Config) { c.DataDir = "" },
	} {
		t.Run(name, func(t *testing.T) {
			c := ok
			mut(&c)
			require.ErrorIs(t, c.Validate(), ErrBadConfig)
		})
	}
}

func TestSafetyReportPassRule(t *testing.T) {
	bad := Result{Violations: []Violation{{Kind: KindLostUpdate}}, Linearizable: true}
	require.False(t, NewReport(Config{Target: TargetLock, Fencing: true}, time.Second, nil, bad).Passed)
	require.True(t, NewReport(Config{Target: TargetLock, Fencing: false}, time.Second, nil, bad).Passed, "an unfenced run passes when it completes")
	require.False(t, NewReport(Config{Target: TargetLock, Fencing: true}, time.Second, nil, Result{}).Passed, "not linearizable fails")
	r := NewReport(Config{Target: TargetElection, Fencing: true}, 1500*time.Millisecond, nil, Result{Linearizable: true})
	require.True(t, r.Passed)
	require.Equal(t, "election-safety", r.Check)
	require.Equal(t, 1.5, r.DurationS)
}
