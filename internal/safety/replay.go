package safety

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Replay and shrink of a check: a failed run records its schedule
// (RecordSchedule) and prints the command that replays it, --schedule
// reads one back (LoadSchedule), and ShrinkCheck delta-debugs a failing
// run's schedule to a smallest one that still fails.

// ErrNothingToShrink: the first run of ShrinkCheck did not fail. (Its text
// is the end of coordctl's message, so it has no package prefix.)
var ErrNothingToShrink = errors.New("nothing to shrink")

// LoadSchedule reads the schedule file at path for a run of target with
// clients clients. Its errors name --schedule as coordctl check prints
// them and match ErrBadSchedule (or the file's open error).
func LoadSchedule(path string, target Target, clients int) (ScheduleFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return ScheduleFile{}, fmt.Errorf("--schedule: %w", err)
	}
	defer fh.Close()
	sf, err := ReadSchedule(fh)
	if err != nil {
		return sf, fmt.Errorf("--schedule %s: %w", path, err)
	}
	if want := string(target) + "-safety"; sf.Check != "" && sf.Check != want {
		return sf, fmt.Errorf("%w: --schedule %s was recorded by %s, not %s", ErrBadSchedule, path, sf.Check, want)
	}
	if err := ValidateSchedule(sf.Steps, clients); err != nil {
		return sf, fmt.Errorf("--schedule %s: %w (with --clients %d)", path, err, clients)
	}
	if sf.Steps == nil {
		sf.Steps = []Step{}
	}
	return sf, nil
}

// RecordSchedule writes steps, the schedule of a run of target with seed,
// to path, or when path is "" to a new file in the temporary directory,
// and returns the file's path.
func RecordSchedule(path string, target Target, seed int64, steps []Step) (string, error) {
	var fh *os.File
	var err error
	if path != "" {
		fh, err = os.Create(path)
	} else {
		fh, err = os.CreateTemp("", fmt.Sprintf("coordctl-%s-safety-seed%d-*.json", target, seed))
	}
	if err != nil {
		return "", fmt.Errorf("record the schedule: %w", err)
	}
	if steps == nil {
		steps = []Step{}
	}
	err = WriteSchedule(fh, ScheduleFile{Check: string(target) + "-safety", Seed: seed, Steps: steps})
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("record the schedule: %w", err)
	}
	return fh.Name(), nil
}

// ShrinkConfig configures ShrinkCheck.
type ShrinkConfig struct {
	// Base is the run to shrink: its Seed, and its Schedule when replaying
	// one. Its DataDir is not used: each run gets a temporary directory.
	Base Config
	// Runs per candidate schedule (Shrink); below 1, DefaultShrinkRuns.
	Runs int
	// Record is where the minimal schedule is written ("": a new file in
	// the temporary directory).
	Record   string
	Progress io.Writer // a line per candidate; nil discards

	// Run runs one check; nil means Run (tests pass a fake).
	Run func(context.Context, Config) (Report, History, error)
}

// ShrinkReport is the outcome of ShrinkCheck, as coordctl prints it.
type ShrinkReport struct {
	Check     string    `json:"check"`
	Seed      int64     `json:"seed"`
	Original  int       `json:"original_steps"`
	Runs      int       `json:"runs"`
	PerCand   int       `json:"runs_per_candidate"`
	Rule      string    `json:"still_fails_when"`
	Minimal   []Step    `json:"minimal"`
	Numbers   []int     `json:"numbers"`
	Attempts  []Attempt `json:"attempts"`
	Schedule  string    `json:"schedule_file"`
	Replay    string    `json:"replay"`
	Confirmed *Report   `json:"confirmed,omitempty"`
	Effects   []Effect  `json:"effects,omitempty"`
	Elapsed   string    `json:"elapsed"`
	// FirstPassed: the first run passed the check (the unfenced baseline,
	// whose lost updates are the finding); a shrunk failed check did not.
	FirstPassed bool `json:"-"`
}

// ShrinkTail is how long a shrunk run goes on after its last fault's quiet
// time: a frozen holder thaws, its successor is granted (one TTL) and the
// late write lands.
func ShrinkTail(ttl time.Duration) time.Duration { return 2*ttl + 3*time.Second }

// ShrinkCheck runs the check once (the seed's schedule, or Base.Schedule)
// and, if it failed (Report.Failed), shrinks its schedule (Shrink), records
// the minimal one and returns the report. A first run that did not fail
// returns ErrNothingToShrink; a run's error (ErrRedisUnreachable, …, or
// ctx's) stops it.
func ShrinkCheck(ctx context.Context, cfg ShrinkConfig) (ShrinkReport, error) {
	start := time.Now()
	run := cfg.Run
	if run == nil {
		run = Run
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	runs := cfg.Runs
	if runs < 1 {
		runs = DefaultShrinkRuns
	}
	base := cfg.Base
	runOnce := func(c Config) (Report, error) {
		dir, err := os.MkdirTemp("", "coordctl-shrink-")
		if err != nil {
			return Report{}, err
		}
		defer os.RemoveAll(dir)
		c.DataDir, c.Progress = dir, nil
		rep, _, err := run(ctx, c)
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		return rep, err
	}
	fmt.Fprintf(progress, "shrink: the first run (seed %d, %s)...\n", base.Seed, base.Duration)
	first, err := runOnce(base)
	if err != nil {
		return ShrinkReport{}, err
	}
	if !first.Failed() {
		return ShrinkReport{}, fmt.Errorf("%s-safety --shrink: the run did not fail (%d lost updates, %d violations): %w; try another --seed or a longer --duration",
			base.Target, first.LostUpdates, first.Violations, ErrNothingToShrink)
	}
	orig := first.Schedule
	fmt.Fprintf(progress, "shrink: it failed with %d faults applied (%d effective); shrinking, up to %d runs per candidate\n", len(orig), first.EffectiveFaults, runs)
	var last *Report
	fails := func(ctx context.Context, steps []Step) (bool, error) {
		c := base
		if c.Schedule = Compact(steps); c.Schedule == nil {
			c.Schedule = []Step{}
		}
		c.Duration = End(c.Schedule) + ShrinkTail(c.TTL)
		rep, err := runOnce(c)
		if err != nil {
			return false, err
		}
		if rep.Failed() {
			last = &rep
		}
		return rep.Failed(), nil
	}
	res, err := Shrink(ctx, orig, runs, progress, fails)
	if err != nil {
		return ShrinkReport{}, err
	}
	minimal := Compact(res.Steps)
	if minimal == nil {
		minimal = []Step{}
	}
	path, err := RecordSchedule(cfg.Record, base.Target, base.Seed, minimal)
	if err != nil {
		return ShrinkReport{}, err
	}
	replay := base
	replay.Duration = (End(minimal) + ShrinkTail(base.TTL)).Round(time.Second)
	out := ShrinkReport{Check: string(base.Target) + "-safety", Seed: base.Seed, Original: len(orig), Runs: res.Runs + 1,
		PerCand: runs, Rule: StillFailsRule(first.Mode), Minimal: minimal, Numbers: res.Numbers, Attempts: res.Attempts,
		Schedule: path, Replay: ReplayCommand(replay, base.Seed) + " --schedule " + path,
		Elapsed: time.Since(start).Round(time.Second).String(), FirstPassed: first.Passed}
	if last != nil && len(last.Schedule) == len(minimal) {
		out.Confirmed, out.Effects = last, last.Effects
	}
	return out, nil
}

// WriteSimple writes the shrink's outcome as coordctl prints it.
func (s ShrinkReport) WriteSimple(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s --shrink: %d of %d faults still fail (seed %d, %d runs in %s)\n", s.Check, len(s.Minimal), s.Original, s.Seed, s.Runs, s.Elapsed)
	fmt.Fprintf(&b, "  still fails when:    %s (%d runs per candidate, stopping at the first failure)\n", s.Rule, s.PerCand)
	fmt.Fprintf(&b, "  minimal schedule (steps %v of the original, re-timed back to back):\n", s.Numbers)
	for _, st := range s.Minimal {
		target := ""
		switch st.Kind {
		case FaultFreezeClient:
			target = fmt.Sprintf("client %d (or the holder then)", st.Client)
		case FaultIsolateMember, FaultCutClient, FaultStopMember:
			target = fmt.Sprintf("member %d", st.Member)
		}
		fmt.Fprintf(&b, "    at %-7s %-15s hold %-7s quiet %-7s %s\n", st.At.Round(100*time.Millisecond), st.Kind, st.Hold.Round(time.Millisecond), st.Quiet.Round(time.Millisecond), target)
	}
	for _, e := range s.Effects {
		fmt.Fprintf(&b, "  in the last failing run, fault %d: %s\n", e.Step, e.What)
	}
	fmt.Fprintf(&b, "replay: %s\n", s.Replay)
	fmt.Fprintf(&b, "  (the same faults at the same offsets; %s)\n", NotReplayed)
	_, err := io.WriteString(w, b.String())
	return err
}
