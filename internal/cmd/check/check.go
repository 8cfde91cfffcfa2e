package check

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil/hold"
	"github.com/coordkit/coordkit/internal/safety"
)

// errCheckFailed: the check ran and found a violation; its report says which.
var errCheckFailed = fmt.Errorf("check failed: %w", cmdutil.ErrFailed)

// NewCmd returns the command coordctl check.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	return NewCmdRun(f, Runners{Suite: safety.RunSuite, Shrink: safety.ShrinkCheck})
}

// Runners are what the safety checks call (cli/cli's runF): tests
// pass recording ones; what a run does is internal/safety's to test.
type Runners struct {
	Suite  func(context.Context, safety.Suite, func(safety.SuiteRun) error) (safety.Summary, error)
	Shrink func(context.Context, safety.ShrinkConfig) (safety.ShrinkReport, error)
}

// NewCmdRun is NewCmd with the runners run: tests pass recording ones.
func NewCmdRun(f *cmdutil.Factory, run Runners) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Jepsen-style safety checks of fenced locks and elections on a real etcd cluster",
		Long: `Run a safety check against a real three-member etcd cluster (embedded, every
link behind a fault-injecting proxy) while a seeded nemesis injects faults:
isolating a member or the current leader, cutting clients off a member,
stopping and restarting a member, freezing a lock holder past its TTL
(in process, and with SIGSTOP of a real 'coordctl lock' or 'coordctl
sidecar' process and the command it runs).

Clients contend for one lock (or one election) and, while they hold it,
increment a counter in the protected resource with a read-modify-write
carrying their fencing token. A checker then reads the resource's log and
the clients' history. See docs/safety.md.`,
		Example: `  coordctl check lock-safety --duration 60s --seed 7
  coordctl check lock-safety --no-fencing --duration 30s -w json
  coordctl check election-safety --duration 60s`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
	}
	cmd.AddCommand(newCheckSafetyCmd(f, safety.TargetLock, run), newCheckSafetyCmd(f, safety.TargetElection, run), newCheckRMWCmd(f),
		newCheckRedsyncLockCmd(f), newCheckPGLockCmd(f), newCheckSQLRMWCmd(f))
	return cmd
}

// checkOptions are the flags of a safety check: the run's safety.Config
// and safety.Suite, bound directly, and what only the command reads.
type checkOptions struct {
	safety.Suite
	Seed                        int64
	SeedRange, Schedule, Policy string
	Faults                      string
	NoFencing                   bool
	ProcessClients              bool
	PythonClients               bool
	Python                      string
	changed                     func(string) bool
}

func newCheckSafetyCmd(f *cmdutil.Factory, target safety.Target, run Runners) *cobra.Command {
	opts := &checkOptions{}
	opts.Base.Target = target
	cfg := &opts.Base
	what := map[safety.Target]string{safety.TargetLock: "lock", safety.TargetElection: "leader election"}[target]
	cmd := &cobra.Command{
		Use:   string(target) + "-safety",
		Short: "Check that a fenced " + what + " protects the resource under faults",
		Long: fmt.Sprintf(`Start a three-member etcd cluster with fault proxies and a protected resource,
run --clients clients that contend for one %[1]s and, while they hold it, increment
a counter in the resource (read, then write the value + 1 with their fencing
token), and let a seeded nemesis inject faults for --duration. Then check:

  - no write was accepted from a holder after a later holder's token was
    admitted (by a write or a fence);
  - no counter update was lost (accepted writes = final counter value);
  - the history of reads, writes and fences is linearizable (porcupine).

Each holder fences (POST /v1/fence) before its first read: that closes the
window in which its predecessor could still write. --no-fence-first leaves
the fence out, to show that window: with fencing on, a paused predecessor's
write can then still land between the new holder's read and its write.

With --no-fencing the same workload and schedule run against a resource that
does not check tokens; the run passes when it completes, and its counts of
overlapping holders and lost updates are the finding.

--seeds A..B (or a list 1,5,9) runs one check per seed, each on a fresh
cluster, on the engine of 'coordctl lab sweep' (a grid of one parameter, the
seed), and prints a row per seed (-w json: one object per seed) and a summary
line: runs, total faults, total violations. --parallel N runs N at once; it
defaults to 1 because the check is timing-sensitive (a frozen holder races its
lease's TTL, a late write races the next grant): runs in parallel share the
CPUs and find what a loaded machine does, and their rows come in the order they
finish.

election-safety only:
  --policy priority|newest-version|oldest-version makes the election
  coordinated: client N publishes priority N%%3 and version 1.(N%%3).0, so a
  preferred client that joins preempts the leader, and each leadership ends,
  at random from the seed, by a resign, a resign-to-best or a resign-to a
  named client. The checks are the same.

lock-safety only:
  --kind rwmutex|semaphore tests coordkit's read-write lock (odd clients write,
  fenced on scope "safety/"; even clients read and share) or semaphore (--limit N
  holders, each slot i its own counter fenced on scope "safety/slots/i"). The check
  adds: never more holders live at once in the resource's log than the lock
  admits. These kinds run without process clients (no sigstop-child).
  --lock redsync --redis ADDR runs the same clients with redsync (a Redis lock
  without fencing tokens) twice, unfenced and with the resource in If-Match mode
  (each write conditional on the version read), and coordkit's lock fenced, all
  under the same faults, and prints one table. Only freeze-client and
  sigstop-child apply (the process clients run 'coordctl check redsync-lock');
  the etcd faults do not. Redis keys go under a random per-run prefix and are
  deleted at the end.
  --python-clients makes the process client a python3 program (--python):
  it takes coordkit's mutex through the coordination API (clients/python, an
  agent the check serves on the cluster), or with --lock redsync redis-py's
  Lock (timeout --ttl, no renewal) on the same Redis key as redsync's clients,
  then does what 'coordctl check rmw' does. kill-client (SIGKILL while it
  holds) joins the default faults. With coordkit's mutex and --resource sql
  it writes to the SQL counter through clients/python's fence_sql (sqlite3;
  postgres: psycopg2; mysql: PyMySQL, Debian's python3-psycopg2 and
  python3-pymysql).
  --lock pg-advisory --dsn DSN runs a PostgreSQL advisory lock (a session-level
  pg_advisory_lock on each client's own lock connection, through a fault proxy;
  the counter in the same database through a pool) twice, unfenced and fenced
  (token: nextval of a per-run sequence on the lock connection after acquiring;
  writes through fencing/sqlfence), and coordkit's lock fenced on the same
  database, and prints one table. Faults: freeze-client, sigstop-child (the
  process clients run 'coordctl check pg-advisory-lock -- coordctl check
  sql-rmw'), and cut-lock-conn (the
  lock connection held in its proxy while the holder works; after the keepalive
  bound, 4s, its server process is ended, as the server does when its
  keepalives give up; the holder's data connections stay up); coordkit's run
  gets freeze-client and cut-client-link. See docs/safety.md.
  --resource sql --driver sqlite|postgres|mysql [--dsn DSN] protects a counter
  row in a SQL database, fenced with fencing/sqlfence (tables with a random
  per-run prefix, dropped at the end; SQLite defaults to a file in the data dir).
  No process clients (they speak HTTP), so no sigstop-child.

Output: a summary with the command that replays the schedule (-w json: one
object); with several runs a table. Exit 0 when passed, 1 when a violation was
found in any run (or Redis or the database is unreachable), 2 on bad usage.
Progress goes to stderr.`, what),
		Example: fmt.Sprintf(`  coordctl check %[1]s-safety --duration 60s --seed 7
  coordctl check %[1]s-safety --no-fencing --duration 20s -w json
  coordctl check %[1]s-safety --seeds 1..10 --duration 60s -w json
  coordctl check lock-safety --kind semaphore --limit 3 --duration 30s
  coordctl check lock-safety --python-clients --seeds 1..10 --duration 60s
  coordctl check lock-safety --lock redsync --redis 127.0.0.1:6379 --duration 60s
  coordctl check lock-safety --lock redsync --redis 127.0.0.1:6379 --python-clients --python /usr/bin/python3 --seeds 1..3 --duration 30s
  coordctl check lock-safety --lock pg-advisory --dsn postgres://root@127.0.0.1:5432/test --duration 60s
  coordctl check lock-safety --resource sql --driver postgres --dsn postgres://root@127.0.0.1:5432/test`, target),
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			opts.changed = cmd.Flags().Changed
			return runCheckSafety(ctx, f, opts, run)
		}),
	}
	fl := cmd.Flags()
	fl.DurationVar(&cfg.Duration, "duration", 60*time.Second, "how long the clients and the nemesis run")
	fl.IntVar(&cfg.Clients, "clients", 5, "number of in-process clients (at least 2)")
	fl.DurationVar(&cfg.TTL, "ttl", 2*time.Second, "lease TTL of each client (at least 1s)")
	fl.Int64Var(&opts.Seed, "seed", 0, "seed of the fault schedule (default: from the clock; printed for replay)")
	fl.BoolVar(&opts.NoFencing, "no-fencing", false, "run against a resource that does not check tokens (the baseline)")
	fl.BoolVar(&cfg.NoFenceFirst, "no-fence-first", false, "holders skip the fence before their first read (shows the window it closes)")
	fl.StringVar(&cfg.DataDir, "data-dir", "", "directory for the cluster and resource data; must be empty or absent (default: a temporary directory, removed after)")
	fl.BoolVar(&opts.ProcessClients, "process-clients", true,
		"also run 'coordctl lock|sidecar ... -- coordctl check rmw' processes, which the nemesis SIGSTOPs")
	fl.StringVar(&opts.History, "history", "", "write the recorded history (ops and the resource's log) as JSON to this file (one run only)")
	fl.StringVar(&opts.SeedRange, "seeds", "", "run one check per seed of the range A..B (inclusive) or the list 1,5,9")
	fl.IntVar(&opts.Parallel, "parallel", 1, "with --seeds: runs at once (1 keeps timing honest)")
	fl.StringVar(&opts.Faults, "faults", "", "the fault kinds to apply, comma-separated (default: all that apply; "+
		"sigstop-supervisor, freezing coordctl alone so that only its watchdog can stop the command, only when named; "+
		"kill-client, SIGKILL to a process client that holds, in the defaults with --python-clients)")
	fl.StringVar(&opts.Schedule, "schedule", "", "replay the fault schedule recorded in this file (a failed run prints one)")
	fl.StringVar(&opts.Record, "record", "", "write the schedule as it ran to this file (default: a failed run writes one to the temporary directory)")
	fl.BoolVar(&opts.Shrink, "shrink", false, "if the run fails, delta-debug its fault schedule to a smallest one that still fails")
	fl.IntVar(&opts.ShrinkRuns, "shrink-runs", safety.DefaultShrinkRuns, "with --shrink: runs per candidate schedule (it still fails if any run fails)")
	fl.StringVar((*string)(&cfg.Resource), "resource", "http", "protected resource: http (coordkit's reference resource) or sql")
	fl.StringVar(&cfg.SQLDriver, "driver", "", "with --resource sql: sqlite, postgres or mysql")
	fl.StringVar(&cfg.SQLDSN, "dsn", "", "with --resource sql or --lock pg-advisory: the database (default for sqlite: a file in the data dir)")
	if target == safety.TargetLock {
		fl.StringVar((*string)(&cfg.Kind), "kind", "mutex", "lock kind: mutex, rwmutex or semaphore")
		fl.IntVar(&cfg.Limit, "limit", 2, "with --kind semaphore: holders at once (1..clients-1)")
		fl.StringVar((*string)(&cfg.Lock), "lock", "coordkit", "lock under test: coordkit, redsync (with --redis) or pg-advisory (with --dsn)")
		fl.StringVar(&cfg.RedisAddr, "redis", "", "with --lock redsync: the Redis server, host:port")
		fl.BoolVar(&opts.PythonClients, "python-clients", false,
			"the process clients are python3 programs holding the lock through the coordination API (clients/python, an agent the check serves on the cluster), not coordctl lock; with --lock redsync, redis-py's Lock")
		fl.StringVar(&opts.Python, "python", "python3",
			"with --python-clients: the python3 to run (with --lock redsync it must import redis: Debian's python3-redis)")
		fl.DurationVar(&f.Global.DialTimeout, "dial-timeout", cmdutil.DefaultDialTimeout, "with --lock redsync or pg-advisory: time to wait for Redis or PostgreSQL to answer")
	}
	if target == safety.TargetElection {
		fl.StringVar(&opts.Policy, "policy", "", "coordinated election: "+hold.PolicyNames()+
			" (clients with differing priorities and versions, preemption, leaderships ending by resign-to)")
	}
	return cmd
}

// suite is the safety.Suite the flags describe, validated (Suite.Validate
// has every rule, those about which flags go together too).
func (o *checkOptions) suite(f *cmdutil.Factory) (safety.Suite, error) {
	s := o.Suite
	s.Given = o.changed
	s.Base.Fencing, s.Base.Policy = !o.NoFencing, election.Policy(o.Policy)
	s.Base.Progress, s.Base.DialTimeout, s.Progress, s.TTY = f.IO.ErrOut, f.Global.DialTimeout, f.IO.ErrOut, cmdutil.IsTerminal(f.IO.ErrOut)
	for _, k := range strings.Split(o.Faults, ",") {
		if k = strings.TrimSpace(k); k != "" {
			s.Base.Kinds = append(s.Base.Kinds, safety.FaultKind(k))
		}
	}
	if o.ProcessClients {
		exe, err := f.Executable()
		if err != nil {
			return s, fmt.Errorf("find coordctl for the process clients: %w", err)
		}
		s.Base.Coordctl = exe
	}
	if o.changed("python") && !o.PythonClients {
		return s, cmdutil.UsageErrorf("--python applies to --python-clients only")
	}
	if o.PythonClients {
		py, err := exec.LookPath(o.Python)
		if err != nil {
			return s, cmdutil.UsageErrorf("--python-clients runs python3: %v", err)
		}
		if s.Base.Lock == safety.LockRedsync && exec.Command(py, "-c", "import redis").Run() != nil {
			return s, cmdutil.UsageErrorf("--python-clients with --lock redsync runs redis-py, and %s cannot import redis: install Debian's python3-redis (it serves /usr/bin/python3) or name a python3 that has it with --python", py)
		}
		if mod, pkg := safety.PythonSQLModule(s.Base.SQLDriver); mod != "" && s.Base.Resource == safety.ResourceSQL && exec.Command(py, "-c", "import "+mod).Run() != nil {
			return s, cmdutil.UsageErrorf("--python-clients with --resource sql --driver %s writes through %s, and %s cannot import it: install Debian's %s (it serves /usr/bin/python3) or name a python3 that has it with --python", s.Base.SQLDriver, mod, py, pkg)
		}
		s.Base.Python = py
	}
	err := s.Choose(o.SeedRange, o.Seed, o.Schedule, time.Now())
	if err == nil {
		err = s.Validate()
	}
	if ue := (interface{ Usage() string })(nil); errors.As(err, &ue) { // *safety.UsageError, *safety.ConfigError
		return s, cmdutil.UsageErrorf("%s", ue.Usage())
	} else if err != nil {
		return s, cmdutil.UsageErrorf("%v", err)
	}
	return s, nil
}

// checkError maps a run's error to its exit: Redis or the database
// unreachable, or an interrupted check, is a failure (1).
func checkError(err error) error {
	switch {
	case errors.Is(err, safety.ErrNothingToShrink), errors.Is(err, safety.ErrRedisUnreachable), errors.Is(err, safety.ErrDatabaseUnreachable):
		return cmdutil.Mark(cmdutil.ErrFailed, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return cmdutil.Mark(cmdutil.ErrFailed, errors.New("check interrupted"))
	}
	return err
}

func runCheckSafety(ctx context.Context, f *cmdutil.Factory, opts *checkOptions, run Runners) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	suite, err := opts.suite(f)
	if err != nil {
		return err
	}
	if suite.Shrink {
		base := suite.Base
		base.Seed = suite.Seeds[0]
		rep, err := run.Shrink(ctx, safety.ShrinkConfig{Base: base, Runs: suite.ShrinkRuns, Record: suite.Record, Progress: f.IO.ErrOut})
		if err != nil {
			return checkError(err)
		}
		if err := p.Print(rep); err != nil {
			return err
		}
		if !rep.FirstPassed {
			return cmdutil.Reported(errCheckFailed) // as the check: the unfenced baseline passes
		}
		return nil
	}
	printAll := func(vs []any) error {
		for _, v := range vs {
			if err := p.Print(v); err != nil {
				return err
			}
		}
		return nil
	}
	sum, err := run.Suite(ctx, suite, func(r safety.SuiteRun) error { return printAll(r.Printed(!p.JSON())) })
	if err != nil {
		return checkError(err)
	}
	if err := printAll(suite.Closing(sum, !p.JSON())); err != nil {
		return err
	}
	if sum.Failed > 0 {
		return cmdutil.Reported(errCheckFailed)
	}
	return nil
}
