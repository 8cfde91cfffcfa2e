package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/scenarios"
	"github.com/coordkit/coordkit/scenarios/report"
)

// Errors of Validate and Run.
var (
	// ErrTTL: a lease TTL that is not whole seconds of at least 2s.
	ErrTTL = errors.New("demo: the lease TTL must be whole seconds, at least 2s")
	// ErrNoOut: the tour has no directory for its reports.
	ErrNoOut = errors.New("demo: no directory for the reports")
	// ErrFencedAccepted: the story's fenced resource accepted the late
	// write. That is a bug.
	ErrFencedAccepted = errors.New("demo: the fenced resource accepted the late write — this is a bug, please report it")
	// ErrClaimFailed: a claim of an experiment of the tour did not hold.
	ErrClaimFailed = errors.New("demo: an experiment's claim did not hold; see its report")
	// ErrInterrupted: the context ended during the tour.
	ErrInterrupted = errors.New("demo: interrupted")
)

// StoryScenario is the scenario whose recorded steps the demo narrates
// first; it is also the tour's first stop.
const StoryScenario = "lock-without-fencing"

// Stop is one experiment of the tour and the paragraph that says what to
// look for.
type Stop struct{ Name, Intro string }

// Tour returns the tour's stops, in order.
func Tour() []Stop {
	return []Stop{
		{StoryScenario, `The story above was a run of this experiment; here are its verdicts. Its
third contender, a "Redis-style" lock (a lease and no token), shows that a
lease is an optimisation that makes overlaps rare; only the token makes the
resource refuse them.`},
		{"fenced-sql", `The same pause against a SQL database (SQLite here; PostgreSQL or MySQL
with 'coordctl scenario run fenced-sql --driver postgres --dsn ...'). The
fence check is one UPDATE on a fence table, first in the transaction that
writes: A's late UPDATE is refused and rolled back, B's deposit stays; the
row written without the check loses it. From a shell, 'coordctl lock NAME --
coordctl sql --driver D --dsn DSN -e "UPDATE ..."' does the same, and exits 5
when stale.`},
		{"minority-partition", `Now consensus itself. Five Raft nodes (real hashicorp/raft, on a simulated
network) are split 2|3. The two-node minority cannot commit anything: it has
no quorum. The three-node majority elects a leader and keeps writing. When
the partition heals, the minority catches up, and porcupine checks that the
whole history is linearizable and that no acknowledged write was lost.`},
		{"write-cost", `What does one consensus write cost? A round trip from the leader to a
majority of followers plus the log writes on the way. The lab measures it
against one-way delays of a rack, a region and a cross-region link and
compares the median with that model.`},
	}
}

// Config is one demo.
type Config struct {
	// TTL is the lease TTL of the story's lock holders: whole seconds, at
	// least 2s.
	TTL time.Duration
	// DataDir keeps etcd's and the resources' data, a fresh directory per
	// experiment under it; empty: a temporary directory, removed at the end.
	DataDir string
	// Out receives the tour's HTML reports (NAME.html); needed unless
	// StoryOnly.
	Out       string
	StoryOnly bool
	// Seed drives the experiments' fault schedules.
	Seed int64
	// Redis, a Redis server's host:port, plays the story's Redis round on
	// it with redsync instead of a model.
	Redis string
	// Registry supplies the scenarios; nil: scenarios.Default().
	Registry *scenarios.Registry
	// StartEtcd starts the scenarios' etcd; nil: etcdembed.Scratch.
	StartEtcd scenarios.EtcdStarter
	// Progress receives progress lines (stderr); nil: none.
	Progress io.Writer
}

// Validate returns ErrTTL or ErrNoOut, or nil.
func (c Config) Validate() error {
	if c.TTL < 2*time.Second || c.TTL%time.Second != 0 {
		return fmt.Errorf("%w: %s", ErrTTL, c.TTL)
	}
	if !c.StoryOnly && c.Out == "" {
		return ErrNoOut
	}
	return nil
}

// Event is one thing the demo tells: a StoryStep, a StopResult or Done.
type Event interface{ WriteText(io.Writer) error }

// StoryStep is one recorded step of the story, a line of the narrative
// (JSON: the step itself).
type StoryStep struct{ report.Step }

// WriteText writes the step as a line of the narrative.
func (s StoryStep) WriteText(w io.Writer) error {
	var err error
	switch s.Event {
	case report.EventHeading:
		_, err = fmt.Fprintf(w, "\n%s\n", s.Text)
	case report.EventExplain:
		_, err = fmt.Fprintf(w, "%s\n", s.Text)
	default:
		_, err = fmt.Fprintf(w, "  [%6.2fs] %-8s %s\n", s.At.D().Seconds(), s.Actor, s.Text)
	}
	return err
}

// StopResult is one experiment of the tour: its verdicts and its report.
type StopResult struct {
	Event  string         `json:"event"` // "scenario"
	Name   string         `json:"name"`
	Passed bool           `json:"passed"`
	Report string         `json:"report"`
	Claims []report.Claim `json:"claims"`
	Intro  string         `json:"-"`
}

// WriteText writes the stop's name, its paragraph, each verdict and where
// the report is.
func (r StopResult) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n", r.Name)
	for _, line := range strings.Split(r.Intro, "\n") {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	for _, c := range r.Claims {
		mark := "holds"
		if !c.Holds {
			mark = "FAILS"
		}
		fmt.Fprintf(&b, "  [%s] %s\n          observed: %s\n", mark, c.Claim, c.Observed)
	}
	fmt.Fprintf(&b, "  report: %s\n", r.Report)
	_, err := io.WriteString(w, b.String())
	return err
}

// Done closes the tour.
type Done struct {
	Event   string   `json:"event"` // "done"
	Reports []string `json:"reports"`
	Passed  bool     `json:"passed"`
}

// WriteText says where the reports are.
func (d Done) WriteText(w io.Writer) error {
	if len(d.Reports) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "\nThe reports are in %s — open them in a browser. 'coordctl scenario list' names the other experiments.\n", filepath.Dir(d.Reports[0]))
	return err
}

// Run plays the story and, unless StoryOnly, the tour, handing every event
// to emit in order; an error from emit ends the demo. It calls Validate.
// Errors: Validate's, ErrFencedAccepted, ErrInterrupted, ErrClaimFailed
// (after the whole tour), a scenario that could not be carried out, and
// the reports' I/O.
func Run(ctx context.Context, c Config, emit func(Event) error) error {
	if err := c.Validate(); err != nil {
		return err
	}
	progress := c.Progress
	if progress == nil {
		progress = io.Discard
	}
	dir := c.DataDir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "coordkit-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	reg := c.Registry
	if reg == nil {
		var err error
		if reg, err = scenarios.Default(); err != nil {
			return err
		}
	}
	start := c.StartEtcd
	if start == nil {
		start = etcdembed.Scratch
	}
	env := func(name string) scenarios.Env {
		return scenarios.Env{Progress: scenarios.Indent(progress, "  "), Seed: c.Seed, Scale: scenarios.ScaleSmall,
			TempDir: filepath.Join(dir, name), StartEtcd: start, LockTTL: c.TTL, Redis: c.Redis}
	}

	fmt.Fprintf(progress, "playing the story (experiment %s) ...\n", StoryScenario)
	story, err := reg.Run(ctx, StoryScenario, env(StoryScenario))
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	rejected := false
	for _, s := range story.Steps {
		rejected = rejected || s.Actor == "fenced" && s.Event == "rejected"
		if err := emit(StoryStep{s}); err != nil {
			return err
		}
	}
	if !rejected {
		return ErrFencedAccepted
	}
	if c.StoryOnly {
		return nil
	}

	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	done := Done{Event: "done", Passed: true}
	for _, stop := range Tour() {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		rep := story
		if stop.Name != StoryScenario {
			fmt.Fprintf(progress, "running experiment %s ...\n", stop.Name)
			if rep, err = reg.Run(ctx, stop.Name, env(stop.Name)); err != nil {
				return fmt.Errorf("demo: experiment %s: %w", stop.Name, err)
			}
		}
		path := filepath.Join(c.Out, stop.Name+".html")
		if err := report.WriteHTMLFile(path, []*report.Report{rep}); err != nil {
			return err
		}
		done.Reports = append(done.Reports, path)
		done.Passed = done.Passed && rep.Passed
		if err := emit(StopResult{Event: "scenario", Name: stop.Name, Passed: rep.Passed, Report: path, Claims: rep.Claims, Intro: stop.Intro}); err != nil {
			return err
		}
	}
	if err := emit(done); err != nil {
		return err
	}
	if !done.Passed {
		return ErrClaimFailed
	}
	return nil
}
