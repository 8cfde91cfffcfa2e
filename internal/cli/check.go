package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/childproc"
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
		newCheckRedsyncLockCmd(f))
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
	fl.StringVar(&opts.DSN, "dsn", "", "with --resource sql: the database (default for sqlite: a file in the data dir)")
	if target == safety.TargetLock {
		fl.StringVar(&opts.Kind, "kind", "mutex", "lock kind: mutex, rwmutex or semaphore")
		fl.IntVar(&opts.Limit, "limit", 2, "with --kind semaphore: holders at once (1..clients-1)")
		fl.StringVar(&opts.Lock, "lock", "coordkit", "lock under test: coordkit or redsync (with --redis)")
		fl.StringVar(&opts.Redis, "redis", "", "with --lock redsync: the Redis server, host:port")
		fl.DurationVar(&f.Global.DialTimeout, "dial-timeout", defaultDialTimeout, "with --lock redsync: time to wait for Redis to answer")
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
	switch {
	case o.Duration < 5*time.Second:
		return usageErrorf("invalid --duration %s: must be at least 5s", o.Duration)
	case o.Clients < 2 || o.Clients > 50:
		return usageErrorf("invalid --clients %d: want 2..50", o.Clients)
	case o.TTL < time.Second:
		return usageErrorf("invalid --ttl %s: must be at least 1s", o.TTL)
	case o.Seeds != "" && o.seedSet:
		return usageErrorf("--seed and --seeds: give one")
	case o.Kind != "" && o.Kind != "mutex" && o.Kind != "rwmutex" && o.Kind != "semaphore":
		return usageErrorf("invalid --kind %q: want mutex, rwmutex or semaphore", o.Kind)
	case o.Kind != "semaphore" && o.limitSet:
		return usageErrorf("--limit applies to --kind semaphore only")
	case o.Kind == "semaphore" && (o.Limit < 1 || o.Limit >= o.Clients):
		return usageErrorf("invalid --limit %d: want 1..%d (fewer than --clients)", o.Limit, o.Clients-1)
	case o.Lock != "" && o.Lock != "coordkit" && o.Lock != "redsync":
		return usageErrorf("invalid --lock %q: want coordkit or redsync", o.Lock)
	case o.Lock == "redsync" && o.Redis == "":
		return usageErrorf("--lock redsync needs --redis ADDR")
	case o.Lock != "redsync" && o.Redis != "":
		return usageErrorf("--redis applies to --lock redsync only")
	case o.Lock == "redsync" && o.Kind != "mutex" && o.Kind != "":
		return usageErrorf("--lock redsync is a mutex; --kind %s does not apply", o.Kind)
	case o.Lock == "redsync" && (o.NoFencing || o.NoFenceFirst):
		return usageErrorf("--lock redsync runs its own modes (unfenced, If-Match, and coordkit fenced); --no-fencing and --no-fence-first do not apply")
	case o.Resource != "http" && o.Resource != "sql":
		return usageErrorf("invalid --resource %q: want http or sql", o.Resource)
	case o.Resource == "sql" && o.Driver != "sqlite" && o.Driver != "postgres" && o.Driver != "mysql":
		return usageErrorf("invalid --driver %q: want sqlite, postgres or mysql", o.Driver)
	case o.Resource == "sql" && o.Driver != "sqlite" && o.DSN == "":
		return usageErrorf("--driver %s needs --dsn", o.Driver)
	case o.Resource != "sql" && (changed("driver") || changed("dsn")):
		return usageErrorf("--driver and --dsn apply to --resource sql only")
	case o.Resource == "sql" && o.Lock == "redsync":
		return usageErrorf("--lock redsync compares with the HTTP resource's If-Match mode; --resource sql does not apply")
	}
	if o.Seeds != "" {
		lo, hi, err := parseSeeds(o.Seeds)
		if err != nil {
			return err
		}
		o.seedLo, o.seedHi = lo, hi
	}
	return nil
}

// checkReport is the result of a check as coordctl prints it.
type checkReport struct {
	safety.Report
	replay   string
	recorded string // the schedule file the replay reads, if written
}

func (r checkReport) MarshalJSON() ([]byte, error) { return json.Marshal(r.Report) }

func (r checkReport) WriteSimple(w io.Writer) error {
	verdict := "PASSED"
	if !r.Passed {
		verdict = "FAILED"
	}
	fencingState := "on"
	if !r.FenceFirst {
		fencingState = "on, but holders do not fence before their first write"
	}
	if !r.Fencing {
		fencingState = "OFF (baseline: the counts below are the finding)"
	}
	var kinds []string
	for k, n := range r.Faults {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	yes := map[bool]string{true: "yes", false: "NO"}
	var b strings.Builder
	if r.Mode == safety.ModeIfMatch {
		fencingState = "OFF, writes conditional on the version read (If-Match)"
	}
	fmt.Fprintf(&b, "%s: %s  (fencing %s, seed %d, %.1fs)\n", r.Check, verdict, fencingState, r.Seed, r.DurationS)
	if r.Lock != "" && (r.Lock != safety.LockCoordkit || (r.Kind != "" && r.Kind != safety.KindMutex) || r.Resource == safety.ResourceSQL) {
		fmt.Fprintf(&b, "  lock:                %s %s (at most %d at once), resource %s\n", r.Lock, r.Kind, r.Limit, r.Resource)
	}
	fmt.Fprintf(&b, "  operations:          %d (%d acquisitions, %d accepted writes, final counter %d)\n", r.Ops, r.Acquisitions, r.Writes, r.FinalValue)
	if r.ReaderAcquisitions > 0 {
		fmt.Fprintf(&b, "  readers:             %d read holdings, at most %d at once\n", r.ReaderAcquisitions, r.MaxReaders)
	}
	fmt.Fprintf(&b, "  faults:              %s\n", strings.Join(kinds, " "))
	fmt.Fprintf(&b, "  stale rejected:      %d\n", r.StaleRejected)
	if r.Mode == safety.ModeIfMatch {
		fmt.Fprintf(&b, "  If-Match refused:    %d\n", r.Conflicts)
	}
	fmt.Fprintf(&b, "  overlapping holders: %d (wrote after a later holder was granted)\n", r.OverlappingHolders)
	fmt.Fprintf(&b, "  lost updates:        %d\n", r.LostUpdates)
	fmt.Fprintf(&b, "  holders in the log:  at most %d live at once\n", r.MaxHolders)
	fmt.Fprintf(&b, "  violations:          %d\n", r.Violations)
	for _, v := range r.Examples {
		fmt.Fprintf(&b, "    %s: %s\n", v.Kind, v.Detail)
	}
	fmt.Fprintf(&b, "  linearizable:        %s\n", yes[r.Linearizable])
	writeEffects(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

func replayCommand(o *checkOptions, seed int64) string {
	s := fmt.Sprintf("coordctl check %s-safety --duration %s --clients %d --ttl %s --seed %d", o.Target, o.Duration, o.Clients, o.TTL, seed)
	if o.Kind != "" && o.Kind != "mutex" {
		s += " --kind " + o.Kind
	}
	if o.Kind == "semaphore" {
		s += fmt.Sprintf(" --limit %d", o.Limit)
	}
	if o.Lock == "redsync" {
		s += " --lock redsync --redis " + o.Redis
	}
	if o.Resource == "sql" {
		s += " --resource sql --driver " + o.Driver
		if o.DSN != "" {
			s += " --dsn DSN"
		}
	}
	if o.NoFencing {
		s += " --no-fencing"
	}
	if o.NoFenceFirst {
		s += " --no-fence-first"
	}
	if !o.ProcessClients {
		s += " --process-clients=false"
	}
	return s
}

// checkRow is one run of several, as a table row (-w json: its report).
type checkRow struct{ safety.Report }

func (r checkRow) MarshalJSON() ([]byte, error) { return json.Marshal(r.Report) }

const checkRowFormat = "%-6s %-9s %-9s %-9s %8s %11s %6s %7s %6s %6s %10s  %s\n"

func checkTableHeader() string {
	return fmt.Sprintf(checkRowFormat, "seed", "lock", "kind", "mode", "acquired", "overlapping", "lost", "holders", "faults", "frozen", "violations", "verdict")
}

func (r checkRow) WriteSimple(w io.Writer) error {
	verdict := "passed"
	if !r.Passed {
		verdict = "FAILED"
	}
	kind := string(r.Kind)
	if kind == "semaphore" {
		kind = fmt.Sprintf("sem/%d", r.Limit)
	}
	if kind == "" {
		kind = "election"
	}
	mode := string(r.Mode)
	if r.Resource == safety.ResourceSQL {
		mode += "/sql"
	}
	frozen := r.Faults["freeze-client"] + r.Faults["sigstop-child"]
	_, err := fmt.Fprintf(w, checkRowFormat, strconv.FormatInt(r.Seed, 10), r.Lock, kind, mode,
		strconv.Itoa(r.Acquisitions), strconv.Itoa(r.OverlappingHolders), strconv.Itoa(r.LostUpdates), strconv.Itoa(r.MaxHolders),
		strconv.Itoa(r.FaultTotal()), strconv.Itoa(frozen), strconv.Itoa(r.Violations), verdict)
	return err
}

// checkSummary closes a table of runs.
type checkSummary struct {
	Summary     bool `json:"summary"`
	Runs        int  `json:"runs"`
	Failed      int  `json:"failed"`
	Faults      int  `json:"faults"`
	Effective   int  `json:"effective_faults"`
	Violations  int  `json:"violations"`
	LostUpdates int  `json:"lost_updates"`
	Overlapping int  `json:"overlapping_holders"`
}

func (s checkSummary) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintf(w, "summary: %d runs, %d failed, %d faults (%d effective), %d violations (%d lost updates, %d overlapping holders in all)\n",
		s.Runs, s.Failed, s.Faults, s.Effective, s.Violations, s.LostUpdates, s.Overlapping)
	return err
}

func (s *checkSummary) add(r safety.Report) {
	s.Runs++
	if !r.Passed {
		s.Failed++
	}
	s.Faults += r.FaultTotal()
	s.Effective += r.EffectiveFaults
	s.Violations += r.Violations
	s.LostUpdates += r.LostUpdates
	s.Overlapping += r.OverlappingHolders
}

// configs are the runs of one seed: one, or for --lock redsync the three
// of its comparison under the same faults (freeze-client and, with process
// clients, sigstop-child: the others are faults of etcd).
func (o *checkOptions) configs(seed int64, base safety.Config) []safety.Config {
	base.Seed = seed
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
	coord.Lock, coord.Fencing, coord.Kinds = safety.LockCoordkit, true, faults
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
	if opts.History != "" && (len(seeds) > 1 || opts.Lock == "redsync") {
		return usageErrorf("--history records one run: not with --seeds or --lock redsync")
	}
	if opts.DataDir != "" {
		if entries, err := os.ReadDir(opts.DataDir); err == nil && len(entries) > 0 {
			return usageErrorf("--data-dir %s is not empty: the check needs a fresh cluster", opts.DataDir)
		}
	}
	base := safety.Config{
		Target: opts.Target, Duration: opts.Duration, Clients: opts.Clients, TTL: opts.TTL,
		Fencing: !opts.NoFencing, NoFenceFirst: opts.NoFenceFirst, Progress: f.IO.ErrOut,
		Kind: safety.Kind(opts.Kind), Limit: opts.Limit, DialTimeout: f.Global.DialTimeout,
		Resource: safety.ResourceImpl(opts.Resource), SQLDriver: opts.Driver, SQLDSN: opts.DSN,
	}
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

// ---- rmw: the command the process clients run under `coordctl lock` ----

type rmwOptions struct {
	URL     string
	Key     string
	ID      string
	Work    time.Duration
	Fence   bool
	IfMatch bool
}

func newCheckRMWCmd(f *factory) *cobra.Command {
	opts := &rmwOptions{}
	cmd := &cobra.Command{
		Use:    "rmw --url URL --key KEY --id ID",
		Short:  "One fenced read-modify-write of a counter (run by lock-safety under 'coordctl lock')",
		Hidden: true,
		Long: `Fence with $COORD_FENCING_TOKEN, read the counter KEY, wait --work, write the
value + 1 tagged with ID.TOKEN; print what happened as one JSON line. Exit 5 if the
write was rejected as stale, 1 on other errors.`,
		Example: `  coordctl lock safety -- coordctl check rmw --url http://127.0.0.1:7070 --key counter --id x-1`,
		Args:    argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheckRMW(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.URL, "url", "", "URL of the protected resource")
	fl.StringVar(&opts.Key, "key", "counter", "the counter's key")
	fl.StringVar(&opts.ID, "id", "", "id stored with the write")
	fl.DurationVar(&opts.Work, "work", 0, "time between the read and the write")
	fl.BoolVar(&opts.Fence, "fence", true, "fence before reading")
	fl.BoolVar(&opts.IfMatch, "if-match", false, "write only if the counter's version is still the one read")
	return cmd
}

type rmwResult safety.RMWResult

func (r rmwResult) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintf(w, "id=%s token=%d fence=%s read=%d wrote=%d write=%s %s\n", r.ID, r.Token, r.Fence, r.Read, r.Wrote, r.Write, r.Message)
	return err
}

func rmwOutcome(err error) safety.Outcome {
	var api *fencing.APIError
	switch {
	case err == nil:
		return safety.OK
	case errors.Is(err, fencing.ErrStale):
		return safety.Stale
	case errors.Is(err, fencing.ErrVersionMismatch):
		return safety.Conflict
	case errors.As(err, &api):
		return safety.Fail
	}
	return safety.Unknown
}

func runCheckRMW(ctx context.Context, f *factory, opts *rmwOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if opts.URL == "" || opts.ID == "" {
		return usageErrorf("--url and --id are required")
	}
	tok, err := parseTokenFlag(f.Getenv(envFencingToken))
	if err != nil {
		return usageErrorf("$%s: %v", envFencingToken, err)
	}
	scope := envScope(f)
	if err := checkScopeFlag(scope); err != nil {
		return err
	}
	hc := &http.Client{Timeout: f.Global.CommandTimeout}
	defer hc.CloseIdleConnections()
	fc := fencing.Client{BaseURL: opts.URL, HTTP: hc}
	// The id names the tenure: a sidecar runs its command again, with the
	// same arguments, each time it is elected.
	res := rmwResult{ID: fmt.Sprintf("%s.%d", opts.ID, tok), Token: uint64(tok)}
	finish := func(err error) error {
		if err != nil {
			res.Message = err.Error()
		}
		if perr := p.Print(res); perr != nil {
			return perr
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, fencing.ErrStale):
			return reported(err)
		}
		return reported(mark(errFailed, err))
	}
	if opts.Fence {
		_, err := fc.Fence(ctx, tok, scope)
		if res.Fence = rmwOutcome(err); err != nil {
			return finish(err)
		}
	}
	e, err := fc.Get(ctx, opts.Key)
	var version uint64
	switch {
	case err == nil:
		version = e.Version
		if res.Read, _, err = safety.ParseValue(e.Value); err != nil {
			return finish(err)
		}
	case errors.Is(err, fencing.ErrNotFound):
	default:
		return finish(err)
	}
	res.ReadOK = true
	if opts.Work > 0 {
		select {
		case <-time.After(opts.Work):
		case <-ctx.Done():
			return finish(ctx.Err())
		}
	}
	res.Wrote = res.Read + 1
	var putOpts []fencing.PutOption
	if opts.IfMatch {
		putOpts = append(putOpts, fencing.IfMatch(version))
	}
	_, err = fc.Put(ctx, opts.Key, safety.FormatValue(res.Wrote, res.ID), tok, scope, putOpts...)
	res.Write = rmwOutcome(err)
	return finish(err)
}

// ---- redsync-lock: `coordctl lock` for the redsync process clients ----

type redsyncLockOptions struct {
	Redis   string
	Prefix  string
	TTL     time.Duration
	Timeout time.Duration
	Command []string
}

func newCheckRedsyncLockCmd(f *factory) *cobra.Command {
	opts := &redsyncLockOptions{}
	cmd := &cobra.Command{
		Use:    "redsync-lock --redis ADDR --prefix P -- COMMAND [ARG...]",
		Short:  "Run a command while holding a check's redsync lock (run by lock-safety --lock redsync)",
		Hidden: true,
		Long: `Take the redsync lock of a lock-safety run (keys under --prefix on --redis), run
the command with $COORD_LOCK_NAME and $COORD_FENCING_TOKEN (the grant's number:
redsync has no token), unlock when it exits, and exit with its status. Like a
user's wrapper around redsync, nothing stops the command when the lock expires.`,
		Example: `  coordctl check redsync-lock --redis 127.0.0.1:6379 --prefix coordkit-safety-x/ -- coordctl check rmw --url URL --id x-1`,
		Args:    argsUsage(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Command = args
			return runCheckRedsyncLock(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Redis, "redis", "", "the Redis server, host:port")
	fl.DurationVar(&f.Global.DialTimeout, "dial-timeout", defaultDialTimeout, "time to wait for Redis to answer")
	fl.StringVar(&opts.Prefix, "prefix", "", "the run's key prefix")
	fl.DurationVar(&opts.TTL, "ttl", 2*time.Second, "the lock's expiry")
	fl.DurationVar(&opts.Timeout, "timeout", 5*time.Second, "give up acquiring after this long")
	return cmd
}

func runCheckRedsyncLock(ctx context.Context, f *factory, opts *redsyncLockOptions) error {
	if opts.Redis == "" || opts.Prefix == "" {
		return usageErrorf("--redis and --prefix are required")
	}
	actx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	hold, err := safety.HoldRedsync(actx, opts.Redis, opts.Prefix, opts.TTL, f.Global.DialTimeout)
	switch {
	case errors.Is(err, safety.ErrRedisUnreachable):
		return err
	case err != nil:
		return mark(errNotAcquired, err)
	}
	release := func() {
		rctx, rcancel := context.WithTimeout(context.Background(), f.Global.CommandTimeout)
		defer rcancel()
		_ = hold.Release(rctx)
	}
	sigs, stopSigs := f.Signals()
	defer stopSigs()
	child, err := childproc.Start(childproc.Config{
		Path: opts.Command[0], Args: opts.Command[1:],
		Env:   map[string]string{envLockName: safety.Scope, envFencingToken: strconv.FormatUint(uint64(hold.Token()), 10)},
		Stdin: f.IO.In, Stdout: f.IO.Out, Stderr: f.IO.ErrOut, KillGrace: childproc.DefaultKillGrace,
	})
	if err != nil {
		release()
		return &childStartError{err: err}
	}
	for {
		select {
		case <-child.Done():
			release()
			if code := child.ExitCode(); code != 0 {
				return &childExitError{code: code}
			}
			return nil
		case sig := <-sigs:
			if s, ok := sig.(syscall.Signal); ok {
				_ = child.Signal(s)
			}
		}
	}
}
