package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/safety"
)

// errCheckFailed: the check ran and found a violation; its report says which.
var errCheckFailed = fmt.Errorf("check failed: %w", errFailed)

func newCheckCmd(f *factory) *cobra.Command {
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
		Args: argsUsage(cobra.NoArgs),
	}
	cmd.AddCommand(newCheckSafetyCmd(f, safety.TargetLock), newCheckSafetyCmd(f, safety.TargetElection), newCheckRMWCmd(f),
		newCheckRedsyncLockCmd(f), newCheckPGLockCmd(f), newCheckSQLRMWCmd(f))
	return cmd
}

type checkOptions struct {
	Target         safety.Target
	Duration       time.Duration
	Clients        int
	TTL            time.Duration
	Seed           int64
	Seeds          string
	NoFencing      bool
	NoFenceFirst   bool
	DataDir        string
	ProcessClients bool
	History        string
	Kind           string
	Limit          int
	Lock           string
	Redis          string
	Resource       string
	Driver         string
	DSN            string
	Policy         string
	Schedule       string
	Record         string
	Shrink         bool
	ShrinkRuns     int
	seedSet        bool
	limitSet       bool
	changed        func(string) bool
	seedLo, seedHi int64
}

func newCheckSafetyCmd(f *factory, target safety.Target) *cobra.Command {
	opts := &checkOptions{Target: target}
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

--seeds A..B runs one check per seed, one after the other, each on a fresh
cluster, and prints a row per seed (-w json: one object per seed) and a
summary line: runs, total faults, total violations.

election-safety only:
  --policy priority|newest-version|oldest-version makes the election
  coordinated: client N publishes priority N%%3 and version 1.(N%%3).0, so a
  preferred client that joins preempts the leader, and each leadership ends,
  at random from the seed, by a resign, a resign-to-best or a resign-to a
  named client. The checks are the same.

lock-safety only:
  --kind rwmutex|semaphore tests coordkit's read-write lock (odd clients write,
  fenced on scope "safety"; even clients read and share) or semaphore (--limit N
  holders, each slot i its own counter fenced on scope "safety#i"). The check
  adds: never more holders live at once in the resource's log than the lock
  admits. These kinds run without process clients (no sigstop-child).
  --lock redsync --redis ADDR runs the same clients with redsync (a Redis lock
  without fencing tokens) twice, unfenced and with the resource in If-Match mode
  (each write conditional on the version read), and coordkit's lock fenced, all
  under the same faults, and prints one table. Only freeze-client and
  sigstop-child apply (the process clients run 'coordctl check redsync-lock');
  the etcd faults do not. Redis keys go under a random per-run prefix and are
  deleted at the end.
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
  coordctl check lock-safety --lock redsync --redis 127.0.0.1:6379 --duration 60s
  coordctl check lock-safety --lock pg-advisory --dsn postgres://root@127.0.0.1:5432/test --duration 60s
  coordctl check lock-safety --resource sql --driver postgres --dsn postgres://root@127.0.0.1:5432/test`, target),
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.seedSet = cmd.Flags().Changed("seed")
			opts.limitSet = cmd.Flags().Changed("limit")
			opts.changed = cmd.Flags().Changed
			ctx, cancel := f.NotifyContext(cmd.Context())
			defer cancel()
			return runCheckSafety(ctx, f, opts)
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&opts.Duration, "duration", 60*time.Second, "how long the clients and the nemesis run")
	fl.IntVar(&opts.Clients, "clients", 5, "number of in-process clients (at least 2)")
	fl.DurationVar(&opts.TTL, "ttl", 2*time.Second, "lease TTL of each client (at least 1s)")
	fl.Int64Var(&opts.Seed, "seed", 0, "seed of the fault schedule (default: from the clock; printed for replay)")
	fl.BoolVar(&opts.NoFencing, "no-fencing", false, "run against a resource that does not check tokens (the baseline)")
	fl.BoolVar(&opts.NoFenceFirst, "no-fence-first", false, "holders skip the fence before their first read (shows the window it closes)")
	fl.StringVar(&opts.DataDir, "data-dir", "", "directory for the cluster and resource data; must be empty or absent (default: a temporary directory, removed after)")
	fl.BoolVar(&opts.ProcessClients, "process-clients", true,
		"also run 'coordctl lock|sidecar ... -- coordctl check rmw' processes, which the nemesis SIGSTOPs")
	fl.StringVar(&opts.History, "history", "", "write the recorded history (ops and the resource's log) as JSON to this file (one run only)")
	fl.StringVar(&opts.Seeds, "seeds", "", "run one check per seed of the range A..B (inclusive)")
	fl.StringVar(&opts.Schedule, "schedule", "", "replay the fault schedule recorded in this file (a failed run prints one)")
	fl.StringVar(&opts.Record, "record", "", "write the schedule as it ran to this file (default: a failed run writes one to the temporary directory)")
	fl.BoolVar(&opts.Shrink, "shrink", false, "if the run fails, delta-debug its fault schedule to a smallest one that still fails")
	fl.IntVar(&opts.ShrinkRuns, "shrink-runs", safety.DefaultShrinkRuns, "with --shrink: runs per candidate schedule (it still fails if any run fails)")
	fl.StringVar(&opts.Resource, "resource", "http", "protected resource: http (coordkit's reference resource) or sql")
	fl.StringVar(&opts.Driver, "driver", "", "with --resource sql: sqlite, postgres or mysql")
	fl.StringVar(&opts.DSN, "dsn", "", "with --resource sql or --lock pg-advisory: the database (default for sqlite: a file in the data dir)")
	if target == safety.TargetLock {
		fl.StringVar(&opts.Kind, "kind", "mutex", "lock kind: mutex, rwmutex or semaphore")
		fl.IntVar(&opts.Limit, "limit", 2, "with --kind semaphore: holders at once (1..clients-1)")
		fl.StringVar(&opts.Lock, "lock", "coordkit", "lock under test: coordkit, redsync (with --redis) or pg-advisory (with --dsn)")
		fl.StringVar(&opts.Redis, "redis", "", "with --lock redsync: the Redis server, host:port")
		fl.DurationVar(&f.Global.DialTimeout, "dial-timeout", defaultDialTimeout, "with --lock redsync or pg-advisory: time to wait for Redis or PostgreSQL to answer")
	}
	if target == safety.TargetElection {
		fl.StringVar(&opts.Policy, "policy", "", "coordinated election: "+policyNames()+
			" (clients with differing priorities and versions, preemption, leaderships ending by resign-to)")
	}
	return cmd
}

// parseSeeds reads "A..B" (A <= B, at most 1000 seeds) or "A".
func parseSeeds(s string) (lo, hi int64, err error) {
	a, b, ok := strings.Cut(s, "..")
	if !ok {
		b = a
	}
	lo, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
	hi, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 64)
	switch {
	case err1 != nil || err2 != nil:
		return 0, 0, usageErrorf("invalid --seeds %q: want A..B, two integers", s)
	case hi < lo:
		return 0, 0, usageErrorf("invalid --seeds %q: %d is below %d", s, hi, lo)
	case hi-lo >= 1000:
		return 0, 0, usageErrorf("invalid --seeds %q: at most 1000 seeds", s)
	}
	return lo, hi, nil
}

func (o *checkOptions) validate() error {
	changed := o.changed
	if changed == nil {
		changed = func(string) bool { return false }
	}
	// The rules of a run are safety.Config.Validate's (below); these are
	// about flags alone.
	switch {
	case o.Duration < 5*time.Second:
		return usageErrorf("invalid --duration %s: must be at least 5s", o.Duration)
	case o.Seeds != "" && o.seedSet:
		return usageErrorf("--seed and --seeds: give one")
	case o.Kind != "semaphore" && o.limitSet:
		return usageErrorf("--limit applies to --kind semaphore only")
	case o.Lock != "redsync" && o.Redis != "":
		return usageErrorf("--redis applies to --lock redsync only")
	case o.Lock == "redsync" && (o.NoFencing || o.NoFenceFirst):
		return usageErrorf("--lock redsync runs its own modes (unfenced, If-Match, and coordkit fenced); --no-fencing and --no-fence-first do not apply")
	case o.Resource != "sql" && o.Lock != lockPG && (changed("driver") || changed("dsn")):
		return usageErrorf("--driver and --dsn apply to --resource sql only")
	}
	if err := o.validatePG(); err != nil {
		return err
	}
	if o.Seeds != "" {
		lo, hi, err := parseSeeds(o.Seeds)
		if err != nil {
			return err
		}
		o.seedLo, o.seedHi = lo, hi
	}
	base := o.config(nil)
	if base.DataDir == "" {
		base.DataDir = os.TempDir() // each run gets a directory of its own later
	}
	for _, cfg := range o.configs(0, base) {
		var ce *safety.ConfigError
		if err := cfg.Validate(); errors.As(err, &ce) {
			return usageErrorf("invalid --%s: %s", ce.Field, ce.Reason)
		} else if err != nil {
			return usageErrorf("%v", err)
		}
	}
	return nil
}

// config is the safety.Config the flags describe (before the per-seed
// variants of configs).
func (o *checkOptions) config(f *factory) safety.Config {
	cfg := safety.Config{
		Target: o.Target, Duration: o.Duration, Clients: o.Clients, TTL: o.TTL,
		Fencing: !o.NoFencing, NoFenceFirst: o.NoFenceFirst, DataDir: o.DataDir,
		Kind: safety.Kind(o.Kind), Limit: o.Limit, Lock: safety.LockImpl(o.Lock), RedisAddr: o.Redis,
		Resource: safety.ResourceImpl(o.Resource), SQLDriver: o.Driver, SQLDSN: o.DSN,
		Policy: election.Policy(o.Policy),
	}
	if f != nil {
		cfg.Progress, cfg.DialTimeout = f.IO.ErrOut, f.Global.DialTimeout
	}
	return cfg
}

// configs are the runs of one seed: one, or for --lock redsync the three
// of its comparison under the same faults (freeze-client and, with process
// clients, sigstop-child: the others are faults of etcd).
func (o *checkOptions) configs(seed int64, base safety.Config) []safety.Config {
	base.Seed = seed
	if o.Lock == lockPG {
		return o.pgConfigs(base)
	}
	if o.Lock != "redsync" {
		return []safety.Config{base}
	}
	faults := []safety.FaultKind{safety.FaultFreezeClient}
	if base.Coordctl != "" {
		faults = append(faults, safety.FaultSigstop)
	}
	unfenced := base
	unfenced.Lock, unfenced.RedisAddr, unfenced.Fencing, unfenced.Kinds = safety.LockRedsync, o.Redis, false, faults
	ifMatch := unfenced
	ifMatch.IfMatch = true
	coord := base
	coord.Lock, coord.RedisAddr, coord.Fencing, coord.Kinds = safety.LockCoordkit, "", true, faults
	return []safety.Config{unfenced, ifMatch, coord}
}

func runCheckSafety(ctx context.Context, f *factory, opts *checkOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if err := opts.validate(); err != nil {
		return err
	}
	schedule, err := opts.loadSchedule()
	if err != nil {
		return err
	}
	seeds := []int64{opts.Seed}
	if !opts.seedSet {
		seeds[0] = time.Now().UnixNano() % 1_000_000
	}
	if opts.Seeds != "" {
		seeds = nil
		for s := opts.seedLo; s <= opts.seedHi; s++ {
			seeds = append(seeds, s)
		}
	}
	if opts.History != "" && (len(seeds) > 1 || opts.Lock == "redsync" || opts.Lock == lockPG) {
		return usageErrorf("--history records one run: not with --seeds or --lock redsync")
	}
	if opts.DataDir != "" {
		if entries, err := os.ReadDir(opts.DataDir); err == nil && len(entries) > 0 {
			return usageErrorf("--data-dir %s is not empty: the check needs a fresh cluster", opts.DataDir)
		}
	}
	base := opts.config(f)
	if opts.ProcessClients {
		exe, err := f.Executable()
		if err != nil {
			return fmt.Errorf("find coordctl for the process clients: %w", err)
		}
		base.Coordctl = exe
	}
	base.Schedule = schedule
	if opts.Shrink {
		return runCheckShrink(ctx, f, opts, base)
	}
	var runs []safety.Config
	for _, seed := range seeds {
		runs = append(runs, opts.configs(seed, base)...)
	}
	table := len(runs) > 1
	var sum checkSummary
	for n, cfg := range runs {
		dir := opts.DataDir
		if dir == "" {
			if dir, err = os.MkdirTemp("", "coordctl-check-"); err != nil {
				return err
			}
		} else if table {
			dir = filepath.Join(dir, strconv.Itoa(n+1))
		}
		cfg.DataDir = dir
		fmt.Fprintf(f.IO.ErrOut, "run %d/%d: lock %s, mode %s, seed %d...\n", n+1, len(runs), or(string(cfg.Lock), "coordkit"), cfg.Mode(), cfg.Seed)
		rep, h, err := safety.Run(ctx, cfg)
		if opts.DataDir == "" {
			_ = os.RemoveAll(dir)
		}
		switch {
		case errors.Is(err, safety.ErrRedisUnreachable), errors.Is(err, safety.ErrDatabaseUnreachable):
			return mark(errFailed, err)
		case err != nil:
			return err
		case ctx.Err() != nil:
			return mark(errFailed, errors.New("check interrupted"))
		}
		if opts.History != "" {
			b, err := json.Marshal(h)
			if err == nil {
				err = os.WriteFile(opts.History, b, 0o644)
			}
			if err != nil {
				return fmt.Errorf("write --history: %w", err)
			}
		}
		sum.add(rep)
		cr, err := newCheckReport(opts, cfg, rep)
		if err != nil {
			return err
		}
		var out any = cr
		if table {
			out = checkRow{rep}
			if n == 0 && !p.JSON() {
				if _, err := io.WriteString(f.IO.Out, checkTableHeader()); err != nil {
					return err
				}
			}
		}
		if err := p.Print(out); err != nil {
			return err
		}
		if table && cr.recorded != "" && !p.JSON() {
			fmt.Fprintf(f.IO.Out, "  replay seed %d: %s\n", cfg.Seed, cr.replay)
		}
	}
	if table {
		sum.Summary = true
		if err := p.Print(sum); err != nil {
			return err
		}
		if !p.JSON() {
			fmt.Fprintf(f.IO.Out, "replay one: %s\n", replayCommand(opts, seeds[0]))
		}
	}
	if sum.Failed > 0 {
		return reported(errCheckFailed)
	}
	return nil
}

func or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}
