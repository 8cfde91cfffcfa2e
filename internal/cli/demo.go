package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/scenarios"
	"github.com/coordkit/coordkit/scenarios/report"
)

type demoOptions struct {
	TTL       time.Duration
	DataDir   string
	Out       string
	StoryOnly bool
	Seed      int64
	Redis     string // a Redis server for the story's Redis round; "" for the model
	// Registry supplies the tour's scenarios; scenarios.Default when nil.
	Registry *scenarios.Registry
}

// storyScenario is the scenario whose recorded steps the demo narrates
// first; it is also the tour's first stop.
const storyScenario = "lock-without-fencing"

// tourStops are the scenarios of the guided tour, each with the paragraph
// that says what to look for.
var tourStops = []struct{ name, intro string }{
	{storyScenario, `The story above was a run of this experiment; here are its verdicts. Its
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

func newDemoCmd(f *factory) *cobra.Command { return newDemoCmdWith(f, nil) }

// newDemoCmdWith is newDemoCmd with the scenarios passed in (nil:
// scenarios.Default), as cli/cli passes a runF: tests give it scenarios
// that record the Env the flags made.
func newDemoCmdWith(f *factory, reg *scenarios.Registry) *cobra.Command {
	opts := &demoOptions{Registry: reg}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "A guided tour: why a lock needs a fencing token, and what consensus costs",
		Long: `A guided tour on an embedded etcd and an in-process Raft lab.

First it plays out the failure every distributed lock must survive: holder A
takes the lock and freezes past its lease (a GC pause, a SIGSTOP, a VM
migration); etcd expires the lease and B takes over and writes; A wakes up and
finishes its write, unaware. A resource that checks fencing tokens rejects A's
late write; one that does not lets it overwrite B's work.

The story is the recorded run of the scenario lock-without-fencing, told
step by step. Then the tour shows the verdicts of that scenario and runs three
more experiments of 'coordctl scenario' at a small scale — fenced-sql (the
same pause against a SQLite database), minority-partition and write-cost —
with a paragraph
each on what to look for, and writes their HTML reports (timelines, charts)
to --out. Everything else it starts is stopped and removed when it ends.
With -w json every step is one JSON object on its own line.`,
		Example: `  coordctl demo
  coordctl demo --out /tmp/tour && xdg-open /tmp/tour/minority-partition.html
  coordctl demo --story-only --ttl 3s
  coordctl demo --story-only --redis 127.0.0.1:6379
  coordctl demo -w json | jq .`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := f.NotifyContext(cmd.Context())
			defer cancel()
			return runDemo(ctx, f, opts)
		},
	}
	cmd.Flags().DurationVar(&opts.TTL, "ttl", 2*time.Second, "lease TTL of the lock holders in the story (whole seconds, at least 2s)")
	cmd.Flags().StringVar(&opts.DataDir, "data-dir", "", "where to keep etcd's and the resources' data (a temporary directory, removed afterwards, when empty)")
	cmd.Flags().StringVar(&opts.Out, "out", "coordkit-demo", "directory for the HTML reports of the tour's experiments")
	cmd.Flags().BoolVar(&opts.StoryOnly, "story-only", false, "play the lock story only, without the other experiments")
	cmd.Flags().Int64Var(&opts.Seed, "seed", 1, "seed of the experiments' fault schedules")
	cmd.Flags().StringVar(&opts.Redis, "redis", "", "a Redis server (host:port): the story's Redis round uses redsync on it instead of a model")
	return cmd
}

// storyStep is one recorded step of the story, printed as a line of the
// narrative (JSON: the step itself).
type storyStep struct{ report.Step }

func (s storyStep) WriteSimple(w io.Writer) error {
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

// tourResult is the JSON line of one experiment of the tour.
type tourResult struct {
	Event  string         `json:"event"`
	Name   string         `json:"name"`
	Passed bool           `json:"passed"`
	Report string         `json:"report"`
	Claims []report.Claim `json:"claims"`
	intro  string
}

func (r tourResult) WriteSimple(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n", r.Name)
	for _, line := range strings.Split(r.intro, "\n") {
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

type tourDone struct {
	Event   string   `json:"event"`
	Reports []string `json:"reports"`
	Passed  bool     `json:"passed"`
}

func (d tourDone) WriteSimple(w io.Writer) error {
	if len(d.Reports) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "\nThe reports are in %s — open them in a browser. 'coordctl scenario list' names the other experiments.\n", filepath.Dir(d.Reports[0]))
	return err
}

func runDemo(ctx context.Context, f *factory, opts *demoOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if opts.TTL < 2*time.Second || opts.TTL%time.Second != 0 {
		return usageErrorf("invalid --ttl %s: want whole seconds, at least 2s", opts.TTL)
	}
	if !opts.StoryOnly && opts.Out == "" {
		return usageErrorf("--out must not be empty")
	}
	dir := opts.DataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "coordkit-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	reg := opts.Registry
	if reg == nil {
		if reg, err = scenarios.Default(); err != nil {
			return err
		}
	}
	env := func(name string) scenarios.Env {
		return scenarios.Env{
			Progress:  prefixWriter{w: f.IO.ErrOut, prefix: "  "},
			Seed:      opts.Seed,
			Scale:     scenarios.ScaleSmall,
			TempDir:   filepath.Join(dir, name),
			StartEtcd: embeddedEtcd,
			LockTTL:   opts.TTL,
			Redis:     opts.Redis,
		}
	}

	fmt.Fprintf(f.IO.ErrOut, "playing the story (experiment %s) ...\n", storyScenario)
	story, err := reg.Run(ctx, storyScenario, env(storyScenario))
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	rejected := false
	for _, s := range story.Steps {
		rejected = rejected || s.Actor == "fenced" && s.Event == "rejected"
		if err := p.Print(storyStep{s}); err != nil {
			return err
		}
	}
	if !rejected {
		return fmt.Errorf("demo: the fenced resource accepted the late write — this is a bug, please report it")
	}
	if opts.StoryOnly {
		return nil
	}

	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	done := tourDone{Event: "done", Passed: true}
	for _, stop := range tourStops {
		if ctx.Err() != nil {
			return mark(errFailed, fmt.Errorf("demo: interrupted"))
		}
		rep := story
		if stop.name != storyScenario {
			fmt.Fprintf(f.IO.ErrOut, "running experiment %s ...\n", stop.name)
			if rep, err = reg.Run(ctx, stop.name, env(stop.name)); err != nil {
				return fmt.Errorf("demo: experiment %s: %w", stop.name, err)
			}
		}
		path := filepath.Join(opts.Out, stop.name+".html")
		if err := writeHTMLReport(path, []*report.Report{rep}); err != nil {
			return err
		}
		done.Reports = append(done.Reports, path)
		done.Passed = done.Passed && rep.Passed
		if err := p.Print(tourResult{Event: "scenario", Name: stop.name, Passed: rep.Passed, Report: path, Claims: rep.Claims, intro: stop.intro}); err != nil {
			return err
		}
	}
	if err := p.Print(done); err != nil {
		return err
	}
	if !done.Passed {
		return mark(errFailed, fmt.Errorf("demo: an experiment's claim did not hold; see its report"))
	}
	return nil
}
