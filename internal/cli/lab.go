package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/chzyer/readline"
	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/cluster/labcmd"
	"github.com/coordkit/coordkit/internal/httpguard"
	"github.com/coordkit/coordkit/internal/labweb"
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
	HTTP         string
	HTTPToken    string
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
from --script or standard input. The lab does not use etcd.

With --http ADDR the lab also serves a live page (and its API, see
docs/lab.md) over the same cluster: the ring of nodes, a lane per node over
time, and controls that send the same command lines to the same session. A
command typed in either shows in both; the shell prints the page's commands
as "[web] LINE". It prints "ready url=http://ADDR/" on standard error and,
when the commands run out (end of --script or of standard input), keeps
serving until interrupted. Only loopback addresses may go without
--http-token FILE; with a token, open the page as URL?token=TOKEN.`,
		Example: `  coordctl lab --nodes 5
  coordctl lab --nodes 3 --delay 5ms --storage simfsync --fsync-latency 2ms
  printf 'put x 1\npartition 1|2,3\nget x --node 1 --mode stale\ncheck\n' | coordctl lab -w json
  coordctl lab --script session.txt --seed 7
  coordctl lab --http 127.0.0.1:7071
  coordctl lab --http 127.0.0.1:7071 --script demo.txt
  coordctl lab --http 0.0.0.0:7071 --http-token token.txt`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := f.NotifyContext(cmd.Context())
			defer cancel()
			return runLab(ctx, f, opts)
		},
	}
	cmd.AddCommand(newLabSweepCmd(f), newLabFigure16Cmd(f))
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
	fl.StringVar(&opts.HTTP, "http", "", "also serve the live page and its API on this address (e.g. 127.0.0.1:7071)")
	fl.StringVar(&opts.HTTPToken, "http-token", "", "file holding the token the page and API require (needed off loopback)")
	return cmd
}

// Memory bounds of a lab session (see docs/lab.md, "Memory").
const (
	labHistoryInMemory  = 1 << 16
	labSnapshotInterval = 5 * time.Second
	// About eight minutes of index samples of five nodes under a load.
	labTimelineIndexSamples = 50000
)

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
	// A long session (a write load for minutes) stays bounded in memory:
	// the history keeps labHistoryInMemory operations in memory and spills
	// older ones to a temporary file; Raft snapshots (and so truncates its
	// in-memory log) every few seconds once 8192 entries have piled up,
	// instead of every two minutes; the timeline thins its oldest index
	// samples.
	cfg.HistoryInMemory = labHistoryInMemory
	cfg.SnapshotInterval = labSnapshotInterval
	cfg.TimelineIndexSamples = labTimelineIndexSamples
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
	token, err := opts.token()
	if err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	c, err := cluster.New(startCtx, cfg)
	cancel()
	if errors.Is(err, cluster.ErrInvalidConfig) {
		return usageErrorf("%v", strings.TrimPrefix(err.Error(), cluster.ErrInvalidConfig.Error()+": "))
	}
	if err != nil {
		return fmt.Errorf("lab: start cluster: %w", err)
	}
	defer c.Close()
	sh, err := newLabShell(c, p)
	if err != nil {
		return err
	}
	defer sh.close()
	if opts.HTTP != "" {
		srv, err := sh.serve(opts.HTTP, token, opts.Script != "")
		if err != nil {
			return err
		}
		defer srv.Close()
		// On every interface the listener's own address (0.0.0.0) cannot
		// be opened: name this machine, and carry the token.
		host, _ := os.Hostname()
		fmt.Fprintf(f.IO.ErrOut, "ready url=%s\n", srv.OpenURL(host))
	}
	leader, term := c.Leader()
	fmt.Fprintf(f.IO.ErrOut, "lab: %d nodes, storage %s, delay %s, leader %d (term %d); type help\n",
		cfg.Nodes, cfg.Storage, cfg.Link.Delay, leader, term)

	if in, ok := script.(*os.File); ok && opts.Script == "" && readline.IsTerminal(int(in.Fd())) {
		if err := sh.interactive(ctx, f); err != nil || sh.exited || opts.HTTP == "" {
			return err
		}
	} else {
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
	}
	if opts.HTTP != "" && ctx.Err() == nil {
		fmt.Fprintf(f.IO.ErrOut, "lab: commands done; serving the page until interrupted\n")
		<-ctx.Done()
	}
	return nil
}

// token reads --http-token's file.
func (o *labOptions) token() (string, error) {
	if o.HTTPToken == "" {
		return "", nil
	}
	if o.HTTP == "" {
		return "", usageErrorf("--http-token needs --http")
	}
	t, err := httpguard.ReadTokenFile(o.HTTPToken)
	if errors.Is(err, httpguard.ErrEmptyToken) {
		return "", usageErrorf("--http-token %s: the file is empty", o.HTTPToken)
	}
	if err != nil {
		return "", fmt.Errorf("lab: %w", err)
	}
	if len(t) < labweb.MinTokenLen {
		return "", usageErrorf("--http-token %s: the token is %d bytes, at least %d are needed (e.g. head -c 24 /dev/urandom | base64 > %s)", o.HTTPToken, len(t), labweb.MinTokenLen, o.HTTPToken)
	}
	return t, nil
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
// itself is cluster/labcmd. With --http the commands go through the
// labweb.Lab the page uses, so that both see the same session.
type labShell struct {
	sess   *labcmd.Session
	web    *labweb.Lab
	source string
	p      *printer
	mu     sync.Mutex // the page's commands print from another goroutine
	exited bool
}

func newLabShell(c *cluster.Cluster, p *printer) (*labShell, error) {
	sess, err := labcmd.NewSession(c)
	if err != nil {
		return nil, err
	}
	return &labShell{sess: sess, p: p, source: labweb.SourceShell}, nil
}

// serve starts the page's lab and server on c; from now on the shell's
// commands go through it.
func (sh *labShell) serve(addr, token string, script bool) (*labweb.Server, error) {
	lab, err := labweb.New(sh.sess.Cluster(), labweb.Options{Echo: sh.echo})
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	srv, err := labweb.NewServer(lab, labweb.ServerConfig{Addr: addr, Token: token})
	if errors.Is(err, labweb.ErrTokenRequired) {
		lab.Close()
		return nil, usageErrorf("--http %s is not a loopback address: it needs --http-token FILE", addr)
	}
	if err != nil {
		lab.Close()
		return nil, fmt.Errorf("lab: %w", err)
	}
	sh.web = lab
	if script {
		sh.source = labweb.SourceScript
	}
	return srv, nil
}

func (sh *labShell) close() {
	if sh.web != nil {
		sh.web.Close()
	}
	sh.sess.Close()
}

// line runs one command line and prints its result; it reports whether
// the shell should exit.
func (sh *labShell) line(ctx context.Context, line string) bool {
	cmd, err := labcmd.Parse(line)
	if err == nil && cmd.Exit() {
		sh.exited = true
		return true
	}
	if err == nil && cmd.Name == "" {
		return false
	}
	if sh.web != nil {
		out, _, _ := sh.web.Run(ctx, sh.source, line)
		sh.print(out)
		return false
	}
	if err != nil {
		var pe *labcmd.ParseError
		errors.As(err, &pe)
		sh.print(labcmd.Output{Cmd: pe.Cmd, Err: err})
		return false
	}
	res, err := sh.sess.Exec(ctx, cmd)
	sh.print(labcmd.Output{Cmd: cmd.Name, Result: res, Err: err})
	return false
}

// echo prints a command the page ran.
func (sh *labShell) echo(ev labweb.CommandEvent, out labcmd.Output) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.p.JSON() {
		fmt.Fprintf(sh.p.out, "[web] %s\n", ev.Line)
	}
	_ = sh.p.Print(textOutput{out})
}

// textOutput prints a result that writes its own text (labcmd.Output, a
// sweep's or the demo's reports) through the printer: JSON as the value
// marshals, simple as its WriteText.
type textOutput struct{ v textWriter }

type textWriter interface{ WriteText(io.Writer) error }

func (o textOutput) MarshalJSON() ([]byte, error)  { return json.Marshal(o.v) }
func (o textOutput) WriteSimple(w io.Writer) error { return o.v.WriteText(w) }

func (sh *labShell) print(o labcmd.Output) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	_ = sh.p.Print(textOutput{o})
}
