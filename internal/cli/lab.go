package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/chzyer/readline"
	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/cluster/labcmd"
)

type labOptions struct {
	Nodes        int
	Delay        time.Duration
	Jitter       time.Duration
	Loss         float64
	Storage      string
	FsyncLatency time.Duration
	DataDir      string
	Seed         int64
	Script       string
	OpTimeout    time.Duration
	NoPipeline   bool
}

func newLabCmd(f *factory) *cobra.Command {
	opts := &labOptions{}
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "A Raft cluster in this process, with a network you control",
		Long: `Start 1 to 7 real hashicorp/raft nodes in this process, joined by a simulated
network, and drive them from a shell: write and read through a client that
finds the leader, cut links, partition, crash, restart and pause nodes, and
watch what writes and each rung of the read ladder cost and return.

Commands (one a line; # starts a comment):
` + labcmd.Help() + `
N may be "leader" (the node that leads, in the highest term, when the command
runs) or "paused" (the lowest-numbered paused node).

A command that fails (a write on the minority side, an unknown command, node
9 of 5) prints its error and the shell goes on; exit status is 0 unless the
lab itself fails. A write that cannot commit fails within --op-timeout with
the reason ("no quorum", "not leader, leader unknown"). With -w json every
command prints one JSON object on one line: {"cmd","ok","error"?, ...}.

Reads from a terminal use line editing and history; otherwise commands come
from --script or standard input. The lab does not use etcd.`,
		Example: `  coordctl lab --nodes 5
  coordctl lab --nodes 3 --delay 5ms --storage simfsync --fsync-latency 2ms
  printf 'put x 1\npartition 1|2,3\nget x --node 1 --mode stale\ncheck\n' | coordctl lab -w json
  coordctl lab --script session.txt --seed 7`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := f.NotifyContext(cmd.Context())
			defer cancel()
			return runLab(ctx, f, opts)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&opts.Nodes, "nodes", 5, "number of Raft nodes, 1 to 7")
	fl.DurationVar(&opts.Delay, "delay", time.Millisecond, "one-way delay of every link")
	fl.DurationVar(&opts.Jitter, "jitter", 0, "random ± jitter of every link")
	fl.Float64Var(&opts.Loss, "loss", 0, "probability (0-1) that a message is lost")
	fl.StringVar(&opts.Storage, "storage", "mem", "log storage: mem, disk (bolt with fsync) or simfsync")
	fl.DurationVar(&opts.FsyncLatency, "fsync-latency", 2*time.Millisecond, "simulated fsync latency of --storage simfsync")
	fl.StringVar(&opts.DataDir, "data-dir", "", "directory for --storage disk (default: a temporary one)")
	fl.Int64Var(&opts.Seed, "seed", 1, "seed of jitter, loss, client choices and generated writes")
	fl.StringVar(&opts.Script, "script", "", "read commands from this file")
	fl.DurationVar(&opts.OpTimeout, "op-timeout", 2*time.Second, "time limit of one client operation")
	fl.BoolVar(&opts.NoPipeline, "no-pipeline", false, "refuse pipelined AppendEntries: one in flight per follower")
	return cmd
}

func (o *labOptions) config() (cluster.Config, error) {
	cfg := cluster.DefaultConfig()
	cfg.Nodes = o.Nodes
	cfg.Link = cluster.LinkConfig{Delay: o.Delay, Jitter: o.Jitter, Loss: o.Loss}
	cfg.Storage = cluster.Storage(o.Storage)
	cfg.FsyncLatency = o.FsyncLatency
	cfg.DataDir = o.DataDir
	cfg.Seed = o.Seed
	cfg.OpTimeout = o.OpTimeout
	cfg.NoPipeline = o.NoPipeline
	if err := cfg.Validate(); err != nil {
		return cfg, usageErrorf("%v", strings.TrimPrefix(err.Error(), cluster.ErrInvalidConfig.Error()+": "))
	}
	return cfg, nil
}

func runLab(ctx context.Context, f *factory, opts *labOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	cfg, err := opts.config()
	if err != nil {
		return err
	}
	var script io.Reader = f.IO.In
	if opts.Script != "" {
		file, err := os.Open(opts.Script)
		if err != nil {
			return fmt.Errorf("lab: %w", err)
		}
		defer file.Close()
		script = file
	}
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	c, err := cluster.New(startCtx, cfg)
	cancel()
	if err != nil {
		return fmt.Errorf("lab: start cluster: %w", err)
	}
	defer c.Close()
	sh, err := newLabShell(c, p)
	if err != nil {
		return err
	}
	leader, term := c.Leader()
	fmt.Fprintf(f.IO.ErrOut, "lab: %d nodes, storage %s, delay %s, leader %d (term %d); type help\n",
		cfg.Nodes, cfg.Storage, cfg.Link.Delay, leader, term)

	if in, ok := script.(*os.File); ok && opts.Script == "" && readline.IsTerminal(int(in.Fd())) {
		return sh.interactive(ctx, f)
	}
	sc := bufio.NewScanner(script)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if ctx.Err() != nil {
			return nil
		}
		if sh.line(ctx, sc.Text()) {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("lab: read commands: %w", err)
	}
	return nil
}

func (sh *labShell) interactive(ctx context.Context, f *factory) error {
	home, _ := os.UserHomeDir()
	hist := ""
	if home != "" {
		hist = home + "/.coordctl_lab_history"
	}
	rl, err := readline.NewEx(&readline.Config{
		Prompt:          "lab> ",
		HistoryFile:     hist,
		InterruptPrompt: "^C",
		EOFPrompt:       "exit",
		Stdout:          f.IO.Out,
		Stderr:          f.IO.ErrOut,
	})
	if err != nil {
		return fmt.Errorf("lab: terminal: %w", err)
	}
	defer rl.Close()
	for ctx.Err() == nil {
		line, err := rl.Readline()
		if errors.Is(err, readline.ErrInterrupt) {
			if line == "" {
				return nil
			}
			continue
		}
		if err != nil {
			return nil // EOF
		}
		if sh.line(ctx, line) {
			return nil
		}
	}
	return nil
}

// labShell reads command lines and prints their results; the language
// itself is cluster/labcmd.
type labShell struct {
	sess *labcmd.Session
	p    *printer
}

func newLabShell(c *cluster.Cluster, p *printer) (*labShell, error) {
	sess, err := labcmd.NewSession(c)
	if err != nil {
		return nil, err
	}
	return &labShell{sess: sess, p: p}, nil
}

// line runs one command line and prints its result; it reports whether
// the shell should exit.
func (sh *labShell) line(ctx context.Context, line string) bool {
	cmd, err := labcmd.Parse(line)
	if err != nil {
		var pe *labcmd.ParseError
		errors.As(err, &pe)
		sh.print(labcmd.Output{Cmd: pe.Cmd, Err: err})
		return false
	}
	if cmd.Name == "" {
		return false
	}
	if cmd.Exit() {
		return true
	}
	res, err := sh.sess.Exec(ctx, cmd)
	sh.print(labcmd.Output{Cmd: cmd.Name, Result: res, Err: err})
	return false
}

// labOutput prints a labcmd.Output through the printer: JSON as labcmd
// marshals it, simple as the shell's text.
type labOutput struct{ labcmd.Output }

func (o labOutput) WriteSimple(w io.Writer) error { return o.WriteText(w) }

func (sh *labShell) print(o labcmd.Output) {
	_ = sh.p.Print(labOutput{o})
}
