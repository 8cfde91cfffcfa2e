package safety

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
)

func TestPGAdvisoryConfig(t *testing.T) {
	ok := Config{Target: TargetLock, Duration: 1, Clients: 2, TTL: 1e9, DataDir: "d", Lock: LockPGAdvisory,
		Resource: ResourceSQL, SQLDriver: "postgres", SQLDSN: "postgres://x"}
	require.NoError(t, ok.Validate())
	require.Equal(t, []FaultKind{FaultFreezeClient, FaultCutLock}, ok.DefaultKinds())
	withProc := ok
	withProc.Coordctl = "/bin/coordctl"
	require.True(t, withProc.ProcessClients(), "process clients write to the SQL counter")
	require.Contains(t, withProc.DefaultKinds(), FaultSigstop)
	for name, mod := range map[string]func(*Config){
		"http resource": func(c *Config) { c.Resource = ResourceHTTP },
		"mysql":         func(c *Config) { c.SQLDriver = "mysql" },
		"no dsn":        func(c *Config) { c.SQLDSN = "" },
		"semaphore":     func(c *Config) { c.Kind = KindSemaphore },
		"election":      func(c *Config) { c.Target = TargetElection },
	} {
		c := ok
		mod(&c)
		require.ErrorIs(t, c.Validate(), ErrBadConfig, name)
	}
}

// The advisory lock under cut-lock-conn alone, on a fresh database: the
// server ends a cut holder's session and grants the lock to the next while
// the cut holder still believes it holds. Fenced with a sequence token it
// passes; unfenced the nemesis bites.
func TestPGAdvisoryCutLockConn(t *testing.T) {
	t.Parallel() // a cluster and a database of its own
	if testing.Short() {
		t.Skip("12-second runs on PostgreSQL")
	}
	for _, fenced := range []bool{true, false} {
		t.Run(map[bool]string{true: "fenced", false: "unfenced"}[fenced], func(t *testing.T) {
			t.Parallel() // a database and a cluster each
			db := sqltest.Open(t, sqlfence.Postgres)
			run := func(d time.Duration) Report {
				rep := shortRun(t, Config{Lock: LockPGAdvisory, Resource: ResourceSQL, SQLDriver: "postgres", SQLDSN: db.DSN,
					Fencing: fenced, Duration: d, Kinds: []FaultKind{FaultCutLock}})
				require.Equal(t, LockPGAdvisory, rep.Lock)
				return rep
			}
			// A cut holder writes late only after the keepalive bound (4s),
			// the server's end of its session and a successor's grant: on a
			// starved machine that may not fit in 12s (at load 10 three cuts
			// were all skipped: no client held yet when each came). Then once
			// more, longer.
			found := func(rep Report) bool {
				if rep.Faults[string(FaultCutLock)] == 0 {
					return false
				}
				if fenced {
					return rep.StaleRejected > 0
				}
				return rep.OverlappingHolders+rep.LostUpdates > 0
			}
			rep := run(12 * time.Second)
			if !found(rep) {
				t.Log("no late write of a cut holder in 12s; again for 24s")
				rep = run(24 * time.Second)
			}
			require.NotZero(t, rep.Faults[string(FaultCutLock)], "no holder's lock connection was cut")
			if fenced {
				require.Zero(t, rep.Violations)
				require.Positive(t, rep.StaleRejected, "the cut holder's late writes are refused")
				return
			}
			require.Positive(t, rep.OverlappingHolders+rep.LostUpdates, "the nemesis did not bite")
		})
	}
}
