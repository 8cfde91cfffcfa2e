package democmd

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/demo"
	"github.com/coordkit/coordkit/scenarios"
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

// NewCmd returns the command coordctl demo.
func NewCmd(f *cmdutil.Factory) *cobra.Command { return newDemoCmdWith(f, nil) }

// newDemoCmdWith is NewCmd with the scenarios passed in (nil:
// scenarios.Default), as cli/cli passes a runF: tests give it scenarios
// that record the Env the flags made.
func newDemoCmdWith(f *cmdutil.Factory, reg *scenarios.Registry) *cobra.Command {
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
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, _ *cobra.Command, _ []string) error {
			return runDemo(ctx, f, opts)
		}),
	}
	cmd.Flags().DurationVar(&opts.TTL, "ttl", 2*time.Second, "lease TTL of the lock holders in the story (whole seconds, at least 2s)")
	cmd.Flags().StringVar(&opts.DataDir, "data-dir", "", "where to keep etcd's and the resources' data (a temporary directory, removed afterwards, when empty)")
	cmd.Flags().StringVar(&opts.Out, "out", "coordkit-demo", "directory for the HTML reports of the tour's experiments")
	cmd.Flags().BoolVar(&opts.StoryOnly, "story-only", false, "play the lock story only, without the other experiments")
	cmd.Flags().Int64Var(&opts.Seed, "seed", 1, "seed of the experiments' fault schedules")
	cmd.Flags().StringVar(&opts.Redis, "redis", "", "a Redis server (host:port): the story's Redis round uses redsync on it instead of a model")
	return cmd
}

func runDemo(ctx context.Context, f *cmdutil.Factory, opts *demoOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	cfg := demo.Config{TTL: opts.TTL, DataDir: opts.DataDir, Out: opts.Out, StoryOnly: opts.StoryOnly, Seed: opts.Seed,
		Redis: opts.Redis, Registry: opts.Registry, Progress: f.IO.ErrOut}
	switch err := cfg.Validate(); {
	case errors.Is(err, demo.ErrTTL):
		return cmdutil.UsageErrorf("invalid --ttl %s: want whole seconds, at least 2s", opts.TTL)
	case errors.Is(err, demo.ErrNoOut):
		return cmdutil.UsageErrorf("--out must not be empty")
	}
	err = demo.Run(ctx, cfg, func(ev demo.Event) error { return p.Print(cmdutil.TextOutput{V: ev}) })
	if errors.Is(err, demo.ErrInterrupted) || errors.Is(err, demo.ErrClaimFailed) {
		return cmdutil.Mark(cmdutil.ErrFailed, err)
	}
	return err
}
