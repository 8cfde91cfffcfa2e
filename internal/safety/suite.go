package safety

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/coordkit/coordkit/internal/sweep"
)

// MaxSeeds bounds the seeds of one Suite.
const MaxSeeds = 1000

// Suite is what `coordctl check lock-safety|election-safety` runs, on the
// internal/sweep engine (the one `coordctl lab sweep` drives): for each
// seed the run Base describes, or with Base.Lock redsync or pg-advisory the
// three runs of its comparison under the same faults (Arms), each on a
// cluster and a data directory of its own.
//
// The engine's grid has the seed as its one parameter (and the arm as a
// second, for a comparison), so each (seed, arm) is a point of one trial:
// the engine runs points in parallel, a point's trials in order.
type Suite struct {
	// Base is the run the flags describe; its Seed is ignored (Seeds give
	// it). An empty DataDir gives each run a fresh temporary directory,
	// removed after; otherwise each run of several gets DataDir/N.
	Base  Config
	Seeds []int64
	// Parallel is how many runs go at once; below 1 means 1. The check is
	// timing-sensitive (a freeze races a lease's TTL, a grant races a late
	// write): runs in parallel share the CPUs and, on a loaded machine,
	// find other things than they would alone. With more than one, the
	// per-fault progress lines of the runs are left out.
	Parallel int
	// Progress receives a line as each run starts and the engine's
	// progress line; nil discards.
	Progress io.Writer
	TTY      bool
	// Results, when not nil, receives the engine's JSON line per run
	// (experiment, point, metrics: Metrics).
	Results io.Writer
	// History, when set, is the file the one run's History is written to
	// as JSON. Record, when set, is where each run's schedule is recorded
	// (otherwise only a failed run's, to a temporary file: NewVerdict).
	History, Record string
	// Shrink (ShrinkCheck instead of RunSuite) and its runs per candidate:
	// Validate checks them against the rest.
	Shrink     bool
	ShrinkRuns int
	// Given says which of coordctl check's flags were given (cobra's
	// Changed), for the rules about flags that cannot go together; nil:
	// none.
	Given func(flag string) bool

	// Run runs one check; nil means Run (tests pass a fake).
	Run func(context.Context, Config) (Report, History, error)
}

// SuiteRun is one finished run of a Suite.
type SuiteRun struct {
	N       int // its number, from 1, in seed-then-arm order
	Config  Config
	Verdict Verdict // its report, replay command and recorded schedule
	History History
	First   bool // the first run of the suite to finish
	runs    int
}

// Printed is what coordctl check prints of the run, in order: alone, its
// Verdict; one of several, its Row, in text after the table header when
// it is the first to finish and followed by the command that replays it
// when its schedule was recorded.
func (r SuiteRun) Printed(text bool) []any {
	if r.runs <= 1 {
		return []any{r.Verdict}
	}
	var out []any
	if text && r.First {
		out = append(out, Text(TableHeader()))
	}
	out = append(out, Row{Report: r.Verdict.Report})
	if text && r.Verdict.Recorded != "" {
		out = append(out, Text(fmt.Sprintf("  replay seed %d: %s\n", r.Verdict.Seed, r.Verdict.Replay)))
	}
	return out
}

// Closing is what coordctl check prints after the runs, in order: for
// several, the summary and, in text, the command that replays the first.
func (s Suite) Closing(sum Summary, text bool) []any {
	if s.Runs() <= 1 {
		return nil
	}
	out := []any{sum}
	if text {
		out = append(out, Text("replay one: "+ReplayCommand(s.Base, s.Seeds[0])+"\n"))
	}
	return out
}

// Text is output that is printed as it is, in text only.
type Text string

// WriteSimple writes t.
func (t Text) WriteSimple(w io.Writer) error {
	_, err := io.WriteString(w, string(t))
	return err
}

// MinDuration is the shortest run coordctl check takes.
const MinDuration = 5 * time.Second

// UsageError is a rule about how coordctl check's flags combine that a
// Suite breaks; its text names the flags. It matches ErrBadConfig.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }
func (e *UsageError) Unwrap() error { return ErrBadConfig }

// Usage is the message as coordctl prints it.
func (e *UsageError) Usage() string { return e.Msg }

func usage(format string, args ...any) error { return &UsageError{Msg: fmt.Sprintf(format, args...)} }

// Arms are the runs of one seed: Base with that seed, or for redsync and
// pg-advisory the three of the comparison.
func (s Suite) Arms(seed int64) []Config {
	base := s.Base
	base.Seed = seed
	switch base.lock() {
	case LockRedsync:
		// The faults of the clients alone (the others are faults of
		// etcd), the same in all three: with Python clients, redis-py's
		// Lock in the first two and the coordination API in the third.
		faults := base.clientFaults()
		unfenced := base
		unfenced.Fencing, unfenced.Kinds = false, faults
		ifMatch := unfenced
		ifMatch.IfMatch = true
		coord := base
		coord.Lock, coord.RedisAddr, coord.Fencing, coord.Kinds = LockCoordkit, "", true, faults
		return []Config{unfenced, ifMatch, coord}
	case LockPGAdvisory:
		// The counter in the same PostgreSQL database for all three.
		base.Resource, base.SQLDriver = ResourceSQL, "postgres"
		unfenced := base
		unfenced.Fencing = false
		fenced := base
		fenced.Fencing = true
		coord := base
		coord.Lock, coord.Fencing, coord.Kinds = LockCoordkit, true, []FaultKind{FaultFreezeClient, FaultCutClient}
		return []Config{unfenced, fenced, coord}
	}
	return []Config{base}
}

// Runs is how many runs the suite makes.
func (s Suite) Runs() int { return len(s.Seeds) * len(s.Arms(0)) }

// Validate checks the suite as coordctl check's flags give it, and every
// run's Config (Config.Validate; a DataDir is not needed). Errors are
// *UsageError or *ConfigError (both match ErrBadConfig).
func (s Suite) Validate() error {
	b, pg, redsync := s.Base, s.Base.lock() == LockPGAdvisory, s.Base.lock() == LockRedsync
	given := s.given()
	switch {
	case given("seeds") && given("seed"):
		return usage("--seed and --seeds: give one")
	case b.kind() != KindSemaphore && given("limit"):
		return usage("--limit applies to --kind semaphore only")
	case b.resource() != ResourceSQL && !pg && (given("driver") || given("dsn")):
		return usage("--driver and --dsn apply to --resource sql only")
	case pg && (given("resource") || given("driver")):
		return usage("--lock pg-advisory protects a counter in its own database; --resource and --driver do not apply")
	case given("schedule") && given("seeds"):
		return usage("--schedule replays one run: not with --seeds")
	case s.Shrink && given("seeds"):
		return usage("--shrink shrinks one run's schedule: give --seed (or --schedule), not --seeds")
	case b.Duration < MinDuration:
		return usage("invalid --duration %s: must be at least %s", b.Duration, MinDuration)
	case !redsync && b.RedisAddr != "":
		return usage("--redis applies to --lock redsync only")
	case redsync && (!b.Fencing || b.NoFenceFirst):
		return usage("--lock redsync runs its own modes (unfenced, If-Match, and coordkit fenced); --no-fencing and --no-fence-first do not apply")
	case pg && b.SQLDSN == "":
		return usage("--lock pg-advisory needs --dsn DSN (its PostgreSQL database)")
	case pg && b.kind() != KindMutex:
		return usage("--lock pg-advisory is a mutex; --kind %s does not apply", b.Kind)
	case pg && (!b.Fencing || b.NoFenceFirst):
		return usage("--lock pg-advisory runs its own modes (unfenced, fenced, and coordkit fenced); --no-fencing and --no-fence-first do not apply")
	case s.Shrink && redsync:
		// --schedule is fine: the three runs of one seed apply the same
		// faults (Arms), so a replay runs all three on the recorded ones.
		return usage("--shrink takes one run; --lock redsync runs three")
	case s.Shrink && (s.ShrinkRuns < 1 || s.ShrinkRuns > 20):
		return usage("invalid --shrink-runs %d: want 1..20", s.ShrinkRuns)
	case s.Parallel < 0 || (given("parallel") && s.Parallel < 1):
		return usage("invalid --parallel %d: want at least 1", s.Parallel)
	case len(s.Seeds) == 0:
		return badConfig("seeds", "no seeds")
	case len(s.Seeds) > MaxSeeds:
		return badConfig("seeds", "at most %d seeds", MaxSeeds)
	case len(s.Seeds) != len(slices.Compact(slices.Sorted(slices.Values(s.Seeds)))):
		return badConfig("seeds", "a seed given twice")
	case s.History != "" && s.Runs() > 1:
		return usage("--history records one run: not with --seeds or --lock redsync")
	}
	if b.DataDir != "" {
		if entries, err := os.ReadDir(b.DataDir); err == nil && len(entries) > 0 {
			return usage("--data-dir %s is not empty: the check needs a fresh cluster", b.DataDir)
		}
	}
	for _, cfg := range s.Arms(0) {
		if cfg.DataDir == "" {
			cfg.DataDir = os.TempDir()
		}
		if err := cfg.Validate(); err != nil {
			return err
		}
	}
	return nil
}

func (s Suite) given() func(string) bool {
	if s.Given == nil {
		return func(string) bool { return false }
	}
	return s.Given
}

// Choose sets the suite's seeds, and for a replay its schedule, as
// coordctl check's flags give them: seeds ("A..B" or a list,
// sweep.ParseSeeds) unless --seed was given too (Validate says so); else
// seed when given; else the seed the schedule file records (LoadSchedule);
// else one from now. Its errors are *UsageError.
func (s *Suite) Choose(seeds string, seed int64, schedule string, now time.Time) error {
	given := s.given()
	if schedule != "" {
		sf, err := LoadSchedule(schedule, s.Base.Target, s.Base.Clients)
		if err != nil {
			return usage("%v", err)
		}
		if s.Base.Schedule = sf.Steps; !given("seed") {
			seed = sf.Seed
		}
	} else if !given("seed") {
		seed = now.UnixNano() % 1_000_000
	}
	s.Seeds = []int64{seed}
	if seeds != "" && !given("seed") {
		var err error
		if s.Seeds, err = sweep.ParseSeeds(seeds); err != nil {
			return usage("invalid --seeds %q: %v", seeds, err)
		}
	}
	return nil
}

// spec is the suite as a sweep: the seed the one swept parameter, the arm
// a second for a comparison; each point runs one trial.
func (s Suite) spec() sweep.Spec {
	sp := sweep.Spec{Experiment: string(s.Base.Target) + "-safety", Seeds: []int64{0}}
	seeds := sweep.Param{Name: "seed"}
	for _, sd := range s.Seeds {
		seeds.Values = append(seeds.Values, strconv.FormatInt(sd, 10))
	}
	sp.Params = append(sp.Params, seeds)
	if arms := s.Arms(0); len(arms) > 1 {
		p := sweep.Param{Name: "arm"}
		for _, a := range arms {
			p.Values = append(p.Values, armName(a))
		}
		sp.Params = append(sp.Params, p)
	}
	return sp
}

// armName names a run of a comparison: lock and mode.
func armName(c Config) string { return string(c.lock()) + "-" + string(c.Mode()) }

// RunSuite runs the suite on the sweep engine and calls each for every
// finished run (one call at a time, in the order runs finish: seed order
// when Parallel is 1). It returns the summary of the runs. The first error
// of a run (ErrRedisUnreachable, ErrDatabaseUnreachable, …) or of each
// stops the suite and is returned; an interrupted suite returns ctx's error.
func RunSuite(ctx context.Context, s Suite, each func(SuiteRun) error) (Summary, error) {
	if err := s.Validate(); err != nil {
		return Summary{}, err
	}
	run := s.Run
	if run == nil {
		run = Run
	}
	progress := &lockedWriter{w: s.Progress}
	if s.Progress == nil {
		progress.w = io.Discard
	}
	spec := s.spec()
	number := map[string]int{}
	var arms = map[string]Config{}
	for i, p := range spec.Grid() {
		number[p.Key()] = i + 1
		seed, _ := strconv.ParseInt(p["seed"], 10, 64)
		for _, a := range s.Arms(seed) {
			if len(spec.Params) == 1 || armName(a) == p["arm"] {
				arms[p.Key()] = a
			}
		}
	}
	total := len(number)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu  sync.Mutex
		sum Summary
	)
	trial := func(ctx context.Context, p sweep.Point) (map[string]float64, error) {
		cfg, n := arms[p.Key()], number[p.Key()]
		dir := s.Base.DataDir
		if dir == "" {
			var err error
			if dir, err = os.MkdirTemp("", "coordctl-check-"); err != nil {
				return nil, err
			}
			defer os.RemoveAll(dir)
		} else if total > 1 {
			dir = filepath.Join(dir, strconv.Itoa(n))
		}
		cfg.DataDir = dir
		if s.Parallel > 1 {
			cfg.Progress = nil
		}
		fmt.Fprintf(progress, "run %d/%d: lock %s, mode %s, seed %d...\n", n, total, cfg.lock(), cfg.Mode(), cfg.Seed)
		rep, h, err := run(ctx, cfg)
		if err == nil && ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		if err == nil {
			mu.Lock()
			err = s.finished(rep, h, &sum, func(v Verdict) error {
				return each(SuiteRun{N: n, Config: cfg, Verdict: v, History: h, First: sum.Runs == 1, runs: total})
			})
			mu.Unlock()
		}
		if err != nil {
			cancel(err)
			return nil, err
		}
		return Metrics(rep), nil
	}
	exp := sweep.OpenFunc(func(_ context.Context, p sweep.Point) (sweep.Fixture, error) {
		return sweep.TrialFunc(func(ctx context.Context, _ int64) (map[string]float64, error) { return trial(ctx, p) }), nil
	})
	prog := sweep.NewProgress(progress, s.TTY, "check "+spec.Experiment, total, nil)
	_, err := sweep.Run(ctx, spec.Experiment, exp, spec.Trials(), sweep.Options{Parallel: s.Parallel, Results: s.Results, Progress: prog})
	if cause := context.Cause(ctx); cause != nil {
		return sum, cause
	}
	return sum, err
}

// finished counts a run, writes its history if asked and hands its
// verdict to each.
func (s Suite) finished(rep Report, h History, sum *Summary, each func(Verdict) error) error {
	sum.Add(rep)
	if s.History != "" {
		b, err := json.Marshal(h)
		if err == nil {
			err = os.WriteFile(s.History, b, 0o644)
		}
		if err != nil {
			return fmt.Errorf("write --history: %w", err)
		}
	}
	v, err := NewVerdict(s.Base, rep, s.Record)
	if err != nil {
		return err
	}
	return each(v)
}

// lockedWriter serialises the lines of runs in parallel and the engine's.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Metrics is a report as the sweep engine's numbers (coordctl lab sweep's
// metrics of a check).
func Metrics(rep Report) map[string]float64 {
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	return map[string]float64{
		"lost_updates": float64(rep.LostUpdates), "overlapping_holders": float64(rep.OverlappingHolders),
		"violations": float64(rep.Violations), "faults": float64(rep.FaultTotal()), "effective_faults": float64(rep.EffectiveFaults),
		"acquisitions": float64(rep.Acquisitions), "writes": float64(rep.Writes), "stale_rejected": float64(rep.StaleRejected),
		"passed": b(rep.Passed), "linearizable": b(rep.Linearizable), "failed": b(rep.Failed()),
	}
}

// Failed reports whether rep shows the failure that replay and shrink are
// about: for the unfenced baseline (which passes when it completes) a lost
// update, the finding it exists to show; otherwise a failed check.
func (r Report) Failed() bool {
	if r.Mode == ModeUnfenced {
		return r.LostUpdates > 0
	}
	return !r.Passed
}

// StillFailsRule says in words what Failed counts, for the output.
func StillFailsRule(mode Mode) string {
	if mode == ModeUnfenced {
		return "at least one of its runs shows a lost update"
	}
	return "at least one of its runs fails the check (any violation, or not linearizable)"
}
