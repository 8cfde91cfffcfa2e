package safety

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
	"github.com/coordkit/coordkit/internal/testbin"
)

// A short fenced run whose process clients are Python programs holding
// through the coordination API: they take the lock and write (their ops
// are in the history), and the run has no violation.
func TestRunPythonClients(t *testing.T) {
	py := testbin.Python(t, "json", "python3") // the Python process clients run clients/python; under CI=true a missing one fails
	runUntilPythonWrote(t, Config{Target: TargetLock, Clients: 2, TTL: 2 * time.Second, Seed: 1, Fencing: true,
		DataDir: t.TempDir(), Coordctl: "coordctl", Python: py, Kinds: []FaultKind{FaultSigstop}})
}

// The same with the SQL resource, on each engine: the Python clients write
// through coordkit.fence_sql in their write's transaction (rmw.py), beside
// the in-process clients' sqlfence, and their writes are in the resource's
// log with no violation.
func TestRunPythonClientsSQL(t *testing.T) {
	for _, d := range sqltest.Dialects {
		t.Run(d.String(), func(t *testing.T) {
			cfg := Config{Target: TargetLock, Clients: 2, TTL: 2 * time.Second, Seed: 1, Fencing: true, DataDir: t.TempDir(),
				Coordctl: "coordctl", Kinds: []FaultKind{FaultSigstop}, Resource: ResourceSQL, SQLDriver: d.String()}
			if d != sqlfence.SQLite {
				cfg.SQLDSN = sqltest.Open(t, d).DSN // the Python clients open the run's own SQLite file
			}
			mod, pkg := PythonSQLModule(d.String())
			cfg.Python = testbin.Python(t, mod, pkg)
			_, h := runUntilPythonWrote(t, cfg)
			logged := map[string]bool{}
			for _, w := range h.Writes {
				logged[w.ID] = true
			}
			for _, op := range h.Ops {
				if op.Client == cfg.Clients+1 && op.Kind == OpWrite && op.Outcome == OK {
					require.True(t, logged[op.ID], "a Python client's write %s said ok is not in the resource's log", op.ID)
				}
			}
		})
	}
}

// runUntilPythonWrote runs cfg for 8s, or longer until a Python process
// client's write is accepted: on a loaded machine the first can take longer
// than that (a CI run beside a build once saw 48 operations in 4s and no
// Python client holding). It requires no violation and a write by a Python
// client in the history.
func runUntilPythonWrote(t *testing.T, cfg Config) (Report, History) {
	t.Helper()
	var progress bytes.Buffer
	const least = 8 * time.Second
	cfg.Duration, cfg.Progress = 2*time.Minute, &progress
	takeClusters(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	pyWrote := make(chan struct{})
	var once sync.Once
	cfg.onProcessWrite = func() { once.Do(func() { close(pyWrote) }) }
	start := time.Now()
	go func() {
		select {
		case <-pyWrote:
		case <-rctx.Done():
			return
		}
		select {
		case <-time.After(least - time.Since(start)):
		case <-rctx.Done():
		}
		stop()
	}()
	rep, h, err := Run(rctx, cfg)
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
	return rep, h
}

func TestPythonClientsConfig(t *testing.T) {
	ok := Config{Target: TargetLock, Duration: time.Second, Clients: 2, TTL: time.Second, DataDir: "d", Coordctl: "c", Python: "python3"}
	require.NoError(t, ok.Validate())
	withSQL := ok
	withSQL.Resource, withSQL.SQLDriver = ResourceSQL, "sqlite"
	require.NoError(t, withSQL.Validate(), "Python clients write to the SQL resource through fence_sql")
	require.True(t, withSQL.ProcessClients())
	for name, mod := range map[string]func(*Config){
		"no process clients": func(c *Config) { c.Coordctl = "" },
		"election":           func(c *Config) { c.Target = TargetElection },
		"semaphore":          func(c *Config) { c.Kind, c.Limit = KindSemaphore, 1 },
		"sql resource, redsync": func(c *Config) {
			c.Resource, c.SQLDriver, c.Lock, c.RedisAddr, c.Fencing = ResourceSQL, "sqlite", LockRedsync, "127.0.0.1:6379", false
		},
		"sql resource, sqlite dsn": func(c *Config) { c.Resource, c.SQLDriver, c.SQLDSN = ResourceSQL, "sqlite", "x.db" },
	} {
		t.Run(name, func(t *testing.T) {
			c := ok
			mod(&c)
			require.ErrorIs(t, c.Validate(), ErrBadConfig)
		})
	}
}

// A Python process client killed (SIGKILL) while it holds: the kill
// applies, and afterwards a client is granted the lock, which none could
// be if the agent had not released the dead client's hold (its session's
// lease stays alive); the fenced run has no violation. With Python clients
// the default faults include kill-client. The kill waits as long as it
// takes for a Python client that says it holds (a loaded machine runs few
// of them), and the run ends 3s after it.
func TestRunPythonClientsKilled(t *testing.T) {
	py := testbin.Python(t, "json", "python3") // the Python process clients run clients/python; under CI=true a missing one fails
	require.Contains(t, Config{Target: TargetLock, Coordctl: "c", Python: py}.DefaultKinds(), FaultKillClient)
	require.NotContains(t, Config{Target: TargetLock, Coordctl: "c"}.DefaultKinds(), FaultKillClient)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	var once sync.Once
	const kill = "SIGKILL process client"
	progress := &stopAtLines{what: kill, n: 1, stop: func() { once.Do(func() { time.AfterFunc(3*time.Second, stop) }) }}
	cfg := Config{Target: TargetLock, Duration: 90 * time.Second, Clients: 2, TTL: 2 * time.Second, Seed: 1, Fencing: true,
		DataDir: t.TempDir(), Coordctl: "coordctl", Python: py, Progress: progress,
		Schedule: []Step{{Kind: FaultKillClient, Hold: 80 * time.Second, At: time.Second}}}
	takeClusters(t, 1)
	rep, h, err := Run(rctx, cfg)
	require.NoError(t, err, progress.String())
	require.Zero(t, rep.Violations, progress.String())
	require.Equal(t, 1, rep.Faults[string(FaultKillClient)], progress.String())
	// The kill's time, from its progress line ("  14.5s     382 ops  SIGKILL …",
	// the run's clock rounded to 0.1s).
	var killedAt float64
	for _, line := range strings.Split(progress.String(), "\n") {
		if strings.Contains(line, kill) {
			_, err := fmt.Sscanf(strings.TrimSpace(line), "%fs", &killedAt)
			require.NoError(t, err, line)
		}
	}
	after := int64((killedAt + 0.05) * float64(time.Second))
	granted := slices.ContainsFunc(h.Ops, func(op Op) bool { return op.Kind == OpAcquire && op.Outcome == OK && op.Return > after })
	require.True(t, granted, "nobody was granted the lock after the kill at %.1fs: %s", killedAt, progress.String())
}

// stopAtLines is a run's Progress: it keeps the lines and calls stop once
// n of them contain what. (Run writes progress one line at a time.)
type stopAtLines struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	what string
	n    int
	stop func()
}

func (w *stopAtLines) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if strings.Count(w.buf.String(), w.what) >= w.n {
		w.stop()
	}
	return len(b), nil
}

func (w *stopAtLines) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// Python process clients holding redis-py's Lock (the in-process clients
// hold redsync's on the same key), unfenced: a Python client frozen while
// it holds loses the lock at its timeout, a later holder writes, and the
// frozen client's write, when it resumes, sets the counter back — an
// update lost, which the run reports. The run ends at that write. Its
// Redis keys are deleted at the end.
func TestRunPythonRedisLockLosesUpdates(t *testing.T) {
	t.Parallel()
	addr := redisAddr(t)
	py := testbin.Python(t, "redis", "python3-redis")
	var progress bytes.Buffer
	cfg := Config{Target: TargetLock, Lock: LockRedsync, RedisAddr: addr, Duration: 60 * time.Second, Clients: 2, TTL: time.Second,
		Seed: 1, DataDir: t.TempDir(), Coordctl: "coordctl", Python: py, Progress: &progress}
	// A freeze of 3s, three times the lock's timeout, every 5s.
	for at := time.Second; at < cfg.Duration; at += 5 * time.Second {
		cfg.Schedule = append(cfg.Schedule, Step{Kind: FaultSigstop, Hold: 3 * time.Second, At: at})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	cfg.onLateWrite = func(overwrote bool) {
		if overwrote {
			stop()
		}
	}
	rep, h, err := Run(rctx, cfg)
	require.NoError(t, err, progress.String())
	t.Logf("%+v", rep)
	require.Contains(t, progress.String(), "holding through redis-py's Lock")
	require.Positive(t, rep.Faults[string(FaultSigstop)], progress.String())
	require.Positive(t, rep.LostUpdates, "no frozen redis-py holder's write set the counter back: %s", progress.String())
	var wrote int
	for _, op := range h.Ops {
		if op.Client == cfg.Clients+1 && op.Kind == OpWrite && op.Outcome == OK {
			wrote++
		}
	}
	require.Positive(t, wrote, "no write by a Python client: %s", progress.String())
}
