package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/cluster/labcmd"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
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

// NewCmd returns the command coordctl lab.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
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
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, _ *cobra.Command, _ []string) error {
			return runLab(ctx, f, opts)
		}),
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

func (o *labOptions) config() (cluster.Config, error) {
	cfg := cluster.DefaultSessionConfig()
	cfg.Nodes = o.Nodes
	cfg.Link = cluster.LinkConfig{Delay: o.Delay, Jitter: o.Jitter, Loss: o.Loss}
	cfg.Storage = cluster.Storage(o.Storage)
	cfg.FsyncLatency = o.FsyncLatency
	cfg.DataDir = o.DataDir
	cfg.Seed = o.Seed
	cfg.OpTimeout = o.OpTimeout
	cfg.NoPipeline = o.NoPipeline
	if err := cfg.Validate(); err != nil {
		return cfg, cmdutil.UsageErrorf("%v", strings.TrimPrefix(err.Error(), cluster.ErrInvalidConfig.Error()+": "))
	}
	return cfg, nil
}

func runLab(ctx context.Context, f *cmdutil.Factory, opts *labOptions) error {
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
		return cmdutil.UsageErrorf("%v", strings.TrimPrefix(err.Error(), cluster.ErrInvalidConfig.Error()+": "))
	}
	if err != nil {
		return fmt.Errorf("lab: start cluster: %w", err)
	}
	defer c.Close()
	sh, err := labweb.NewShell(c, labweb.ShellConfig{
		Print: func(o labcmd.Output) { _ = p.Print(cmdutil.TextOutput{V: o}) },
		Echo: func(ev labweb.CommandEvent, o labcmd.Output) {
			if !p.JSON() {
				fmt.Fprintf(f.IO.Out, "[web] %s\n", ev.Line)
			}
			_ = p.Print(cmdutil.TextOutput{V: o})
		},
	})
	if err != nil {
		return err
	}
	defer sh.Close()
	if opts.HTTP != "" {
		srv, err := sh.Serve(labweb.ServerConfig{Addr: opts.HTTP, Token: token}, opts.Script != "")
		if errors.Is(err, labweb.ErrTokenRequired) {
			return cmdutil.UsageErrorf("--http %s is not a loopback address: it needs --http-token FILE", opts.HTTP)
		} else if err != nil {
			return fmt.Errorf("lab: %w", err)
		}
		// On every interface the listener's own address (0.0.0.0) cannot
		// be opened: name this machine, and carry the token.
		host, _ := os.Hostname()
		fmt.Fprintf(f.IO.ErrOut, "ready url=%s\n", srv.OpenURL(host))
	}
	leader, term := c.Leader()
	fmt.Fprintf(f.IO.ErrOut, "lab: %d nodes, storage %s, delay %s, leader %d (term %d); type help\n",
		cfg.Nodes, cfg.Storage, cfg.Link.Delay, leader, term)

	history := ""
	if home, _ := os.UserHomeDir(); home != "" {
		history = home + "/.coordctl_lab_history"
	}
	return sh.Run(ctx, labweb.RunConfig{Terminal: opts.Script == "" && cmdutil.IsTerminal(script), History: history, In: script,
		Out: f.IO.Out, ErrOut: f.IO.ErrOut})
}

// token reads --http-token's file.
func (o *labOptions) token() (string, error) {
	if o.HTTPToken == "" {
		return "", nil
	}
	if o.HTTP == "" {
		return "", cmdutil.UsageErrorf("--http-token needs --http")
	}
	t, err := httpguard.ReadTokenFile(o.HTTPToken)
	if errors.Is(err, httpguard.ErrEmptyToken) {
		return "", cmdutil.UsageErrorf("--http-token %s: the file is empty", o.HTTPToken)
	}
	if err != nil {
		return "", fmt.Errorf("lab: %w", err)
	}
	if len(t) < labweb.MinTokenLen {
		return "", cmdutil.UsageErrorf("--http-token %s: the token is %d bytes, at least %d are needed (e.g. head -c 24 /dev/urandom | base64 > %s)", o.HTTPToken, len(t), labweb.MinTokenLen, o.HTTPToken)
	}
	return t, nil
}
