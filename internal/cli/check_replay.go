package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/coordkit/coordkit/internal/safety"
)

// Replay and shrink of the safety checks: --schedule FILE replays a
// recorded fault schedule, a failed run records its schedule and prints
// the command that replays it, and --shrink delta-debugs a failing run's
// schedule to a smallest one that still fails.

// checkFailed reports whether rep shows the failure replay and shrink are
// about: for the unfenced baseline (which "passes" when it completes) a
// lost update, the finding it exists to show; otherwise a failed check.
func checkFailed(rep safety.Report) bool {
	if rep.Mode == safety.ModeUnfenced {
		return rep.LostUpdates > 0
	}
	return !rep.Passed
}

// stillFailsRule says in words what checkFailed counts, for the output.
func stillFailsRule(mode safety.Mode) string {
	if mode == safety.ModeUnfenced {
		return "at least one of its runs shows a lost update"
	}
	return "at least one of its runs fails the check (any violation, or not linearizable)"
}

// validateReplay checks --schedule, --shrink and --shrink-runs against the
// other options.
func (o *checkOptions) validateReplay() error {
	switch {
	case o.Schedule != "" && o.Seeds != "":
		return usageErrorf("--schedule replays one run: not with --seeds")
	case o.Shrink && o.Seeds != "":
		return usageErrorf("--shrink shrinks one run's schedule: give --seed (or --schedule), not --seeds")
	case (o.Shrink || o.Schedule != "") && o.Lock == "redsync":
		return usageErrorf("--schedule and --shrink take one run; --lock redsync runs three")
	case o.ShrinkRuns < 1 || o.ShrinkRuns > 20:
		return usageErrorf("invalid --shrink-runs %d: want 1..20", o.ShrinkRuns)
	}
	return nil
}

// loadSchedule reads --schedule (nil without); the file's seed is the
// run's unless --seed was given.
func (o *checkOptions) loadSchedule() ([]safety.Step, error) {
	if err := o.validateReplay(); err != nil {
		return nil, err
	}
	if o.Schedule == "" {
		return nil, nil
	}
	fh, err := os.Open(o.Schedule)
	if err != nil {
		return nil, usageErrorf("--schedule: %v", err)
	}
	defer fh.Close()
	sf, err := safety.ReadSchedule(fh)
	if err != nil {
		return nil, usageErrorf("--schedule %s: %v", o.Schedule, err)
	}
	if want := string(o.Target) + "-safety"; sf.Check != "" && sf.Check != want {
		return nil, usageErrorf("--schedule %s was recorded by %s, not %s", o.Schedule, sf.Check, want)
	}
	if err := safety.ValidateSchedule(sf.Steps, o.Clients); err != nil {
		return nil, usageErrorf("--schedule %s: %v (with --clients %d)", o.Schedule, err, o.Clients)
	}
	if sf.Steps == nil {
		sf.Steps = []safety.Step{}
	}
	if !o.seedSet {
		o.Seed, o.seedSet = sf.Seed, true
	}
	return sf.Steps, nil
}

// recordSchedule writes steps to a new file and returns its path: --record
// when given, else a fresh file in the temporary directory.
func (o *checkOptions) recordSchedule(seed int64, steps []safety.Step) (string, error) {
	var fh *os.File
	var err error
	if o.Record != "" {
		fh, err = os.Create(o.Record)
	} else {
		fh, err = os.CreateTemp("", fmt.Sprintf("coordctl-%s-safety-seed%d-*.json", o.Target, seed))
	}
	if err != nil {
		return "", fmt.Errorf("record the schedule: %w", err)
	}
	if steps == nil {
		steps = []safety.Step{}
	}
	err = safety.WriteSchedule(fh, safety.ScheduleFile{Check: string(o.Target) + "-safety", Seed: seed, Steps: steps})
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("record the schedule: %w", err)
	}
	return fh.Name(), nil
}

// newCheckReport is a run's report as printed: with the schedule recorded
// and its replay command when the run failed (or --record asks).
func newCheckReport(o *checkOptions, cfg safety.Config, rep safety.Report) (checkReport, error) {
	r := checkReport{Report: rep, replay: replayCommand(o, cfg.Seed)}
	if checkFailed(rep) || o.Record != "" {
		path, err := o.recordSchedule(cfg.Seed, rep.Schedule)
		if err != nil {
			return r, err
		}
		r.replay += " --schedule " + path
		r.recorded = path
	}
	return r, nil
}

// writeEffects prints what each fault touched and the replay command.
func writeEffects(b *strings.Builder, r checkReport) {
	if len(r.Effects) > 0 {
		fmt.Fprintf(b, "  effective faults:    %d of %d applied (a freeze whose holder was superseded and wrote late; a cluster fault during which a client operation failed)\n", r.EffectiveFaults, len(r.Effects))
		for _, e := range r.Effects {
			mark := " "
			if e.Effective {
				mark = "*"
			}
			fmt.Fprintf(b, "   %s %2d %-15s %6.1fs  %s\n", mark, e.Step, e.Kind, e.AtS, e.What)
		}
	}
	fmt.Fprintf(b, "replay: %s\n", r.replay)
	if r.recorded != "" {
		fmt.Fprintf(b, "  (the same faults at the same offsets; %s)\n", safety.NotReplayed)
	}
}

// shrinkReport is the outcome of --shrink.
type shrinkReport struct {
	Check     string           `json:"check"`
	Seed      int64            `json:"seed"`
	Original  int              `json:"original_steps"`
	Runs      int              `json:"runs"`
	PerCand   int              `json:"runs_per_candidate"`
	Rule      string           `json:"still_fails_when"`
	Minimal   []safety.Step    `json:"minimal"`
	Numbers   []int            `json:"numbers"`
	Attempts  []safety.Attempt `json:"attempts"`
	Schedule  string           `json:"schedule_file"`
	Replay    string           `json:"replay"`
	Confirmed *safety.Report   `json:"confirmed,omitempty"`
	Effects   []safety.Effect  `json:"effects,omitempty"`
	Elapsed   string           `json:"elapsed"`
}

func (s shrinkReport) WriteSimple(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s --shrink: %d of %d faults still fail (seed %d, %d runs in %s)\n", s.Check, len(s.Minimal), s.Original, s.Seed, s.Runs, s.Elapsed)
	fmt.Fprintf(&b, "  still fails when:    %s (%d runs per candidate, stopping at the first failure)\n", s.Rule, s.PerCand)
	fmt.Fprintf(&b, "  minimal schedule (steps %v of the original, re-timed back to back):\n", s.Numbers)
	for _, st := range s.Minimal {
		target := ""
		switch st.Kind {
		case safety.FaultFreezeClient:
			target = fmt.Sprintf("client %d (or the holder then)", st.Client)
		case safety.FaultIsolateMember, safety.FaultCutClient, safety.FaultStopMember:
			target = fmt.Sprintf("member %d", st.Member)
		}
		fmt.Fprintf(&b, "    at %-7s %-15s hold %-7s quiet %-7s %s\n", st.At.Round(100*time.Millisecond), st.Kind, st.Hold.Round(time.Millisecond), st.Quiet.Round(time.Millisecond), target)
	}
	for _, e := range s.Effects {
		fmt.Fprintf(&b, "  in the last failing run, fault %d: %s\n", e.Step, e.What)
	}
	fmt.Fprintf(&b, "replay: %s\n", s.Replay)
	fmt.Fprintf(&b, "  (the same faults at the same offsets; %s)\n", safety.NotReplayed)
	_, err := io.WriteString(w, b.String())
	return err
}

// shrinkTail is how long a shrunk run goes on after its last fault's quiet
// time: a frozen holder thaws, its successor is granted (one TTL) and the
// late write lands.
func shrinkTail(ttl time.Duration) time.Duration { return 2*ttl + 3*time.Second }

// runCheckShrink runs the check once (the seed's schedule or --schedule),
// and if it fails, shrinks its schedule.
func runCheckShrink(ctx context.Context, f *factory, opts *checkOptions, base safety.Config) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	start := time.Now()
	runOnce := func(cfg safety.Config) (safety.Report, error) {
		dir, err := os.MkdirTemp("", "coordctl-shrink-")
		if err != nil {
			return safety.Report{}, err
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
		cfg.Progress = io.Discard
		rep, _, err := safety.Run(ctx, cfg)
		switch {
		case errors.Is(err, safety.ErrRedisUnreachable), errors.Is(err, safety.ErrDatabaseUnreachable):
			return rep, mark(errFailed, err)
		case err != nil:
			return rep, err
		case ctx.Err() != nil:
			return rep, mark(errFailed, errors.New("check interrupted"))
		}
		return rep, nil
	}
	base.Seed = opts.Seed
	fmt.Fprintf(f.IO.ErrOut, "shrink: the first run (seed %d, %s)...\n", base.Seed, base.Duration)
	first, err := runOnce(base)
	if err != nil {
		return err
	}
	if !checkFailed(first) {
		return mark(errFailed, fmt.Errorf("%s-safety --shrink: the run did not fail (%d lost updates, %d violations): nothing to shrink; try another --seed or a longer --duration", opts.Target, first.LostUpdates, first.Violations))
	}
	orig := first.Schedule
	fmt.Fprintf(f.IO.ErrOut, "shrink: it failed with %d faults applied (%d effective); shrinking, up to %d runs per candidate\n", len(orig), first.EffectiveFaults, opts.ShrinkRuns)
	var last *safety.Report
	fails := func(ctx context.Context, steps []safety.Step) (bool, error) {
		cfg := base
		cfg.Schedule = safety.Compact(steps)
		if cfg.Schedule == nil {
			cfg.Schedule = []safety.Step{}
		}
		cfg.Duration = safety.End(cfg.Schedule) + shrinkTail(cfg.TTL)
		rep, err := runOnce(cfg)
		if err != nil {
			return false, err
		}
		if checkFailed(rep) {
			last = &rep
		}
		return checkFailed(rep), nil
	}
	res, err := safety.Shrink(ctx, orig, opts.ShrinkRuns, f.IO.ErrOut, fails)
	if err != nil {
		return err
	}
	minimal := safety.Compact(res.Steps)
	if minimal == nil {
		minimal = []safety.Step{}
	}
	path, err := opts.recordSchedule(base.Seed, minimal)
	if err != nil {
		return err
	}
	o := *opts
	o.Duration = (safety.End(minimal) + shrinkTail(base.TTL)).Round(time.Second)
	out := shrinkReport{Check: string(opts.Target) + "-safety", Seed: base.Seed, Original: len(orig), Runs: res.Runs + 1,
		PerCand: opts.ShrinkRuns, Rule: stillFailsRule(first.Mode), Minimal: minimal, Numbers: res.Numbers, Attempts: res.Attempts,
		Schedule: path, Replay: replayCommand(&o, base.Seed) + " --schedule " + path, Elapsed: time.Since(start).Round(time.Second).String()}
	if last != nil && len(last.Schedule) == len(minimal) {
		out.Confirmed, out.Effects = last, last.Effects
	}
	if err := p.Print(out); err != nil {
		return err
	}
	if !first.Passed {
		// As the check itself: the unfenced baseline passes when it
		// completes (its lost updates are the finding); others fail.
		return reported(errCheckFailed)
	}
	return nil
}
