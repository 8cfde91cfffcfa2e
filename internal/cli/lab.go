package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chzyer/readline"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/coordkit/coordkit/cluster"
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
  status                          each node's state, term, commit/applied index,
                                  whom it reaches, and whether a quorum exists
  leader                          the current leader and term
  put K V [--via N]               write; --via sends it to node N, which
                                  forwards it to the leader if it is not
  get K [--node N] [--mode M]     read; M is stale, lease, verify, readindex
                                  (default) or log; --node asks node N
  cas K OLD NEW                   compare-and-set
  delete K                        delete
  partition A|B[|C]               cut every link between groups (e.g. 1,2|3,4,5)
  isolate N                       cut N off from everyone
  cut N M                         drop messages N→M (one way)
  heal                            remove every cut (delays stay)
  delay N M D [--jitter J]        one-way delay D on N→M and M→N
  crash N | restart N             stop node N (its log survives) / start it again
  pause N D | resume N            freeze N for D: it neither sends, receives
                                  nor applies; requests wait for it
  wait D | wait leader            sleep D; or wait (up to 10s) for a leader
                                  with a quorum
  bench writes N [--concurrency C]  N generated writes, throughput and latency
  check                           check the history so far with porcupine
  history FILE.json|FILE.html     export the history (JSON, or porcupine's view)
  timeline FILE.json              export the timeline of events
  links                           every directed link: delay, jitter, loss,
                                  cut, and messages sent/delivered/dropped
  help                            this list

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
	sh := newLabShell(c, p, cfg)
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

// labShell runs the lab's commands against one cluster.
type labShell struct {
	c      *cluster.Cluster
	p      *printer
	cfg    cluster.Config
	client *cluster.Client
}

func newLabShell(c *cluster.Cluster, p *printer, cfg cluster.Config) *labShell {
	return &labShell{c: c, p: p, cfg: cfg, client: c.NewClient(0)}
}

// line runs one command line and prints its result; it reports whether
// the shell should exit.
func (sh *labShell) line(ctx context.Context, line string) bool {
	if i := strings.Index(line, "#"); i >= 0 {
		line = line[:i]
	}
	args, err := splitWords(line)
	if err == nil && len(args) == 0 {
		return false
	}
	name := ""
	if len(args) > 0 {
		name = args[0]
	}
	if name == "exit" || name == "quit" {
		return true
	}
	var res any
	if err == nil {
		res, err = sh.exec(ctx, name, args[1:])
	}
	sh.print(name, res, err)
	return false
}

// labOutput is one command's printed result.
type labOutput struct {
	cmd string
	res any
	err error
}

func (o labOutput) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	if o.res != nil {
		b, err := json.Marshal(o.res)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			m = map[string]any{"result": o.res}
		}
	}
	m["cmd"] = o.cmd
	m["ok"] = o.err == nil
	if o.err != nil {
		m["error"] = o.err.Error()
	}
	return json.Marshal(m)
}

func (o labOutput) WriteSimple(w io.Writer) error {
	if o.err != nil {
		if f, ok := o.res.(labOpFailure); ok {
			_, err := fmt.Fprintf(w, "error: %v (outcome %s after %.0fms)\n", o.err, f.Outcome, f.LatencyMs)
			return err
		}
		_, err := fmt.Fprintf(w, "error: %v\n", o.err)
		return err
	}
	if s, ok := o.res.(simpleWriter); ok {
		return s.WriteSimple(w)
	}
	if o.res == nil {
		_, err := fmt.Fprintln(w, "ok")
		return err
	}
	_, err := fmt.Fprintln(w, o.res)
	return err
}

func (sh *labShell) print(name string, res any, err error) {
	_ = sh.p.Print(labOutput{cmd: name, res: res, err: err})
}

// Results of the shell's commands.
type (
	labText struct {
		Text string `json:"message"`
	}
	labLeader struct {
		Leader cluster.NodeID `json:"leader"`
		Term   uint64         `json:"term"`
	}
	labOpResult struct {
		Op        string         `json:"op"`
		Key       string         `json:"key"`
		Value     *string        `json:"value,omitempty"`
		Found     *bool          `json:"found,omitempty"`
		Swapped   *bool          `json:"swapped,omitempty"`
		Mode      string         `json:"mode,omitempty"`
		Node      cluster.NodeID `json:"node"`
		Entry     cluster.NodeID `json:"entry"`
		Hops      int            `json:"hops"`
		Outcome   string         `json:"outcome"`
		LatencyMs float64        `json:"latency_ms"`
	}
	labCheck struct {
		Linearizable bool     `json:"linearizable"`
		Verdict      string   `json:"verdict"`
		Ops          int      `json:"ops"`
		Keys         int      `json:"keys"`
		IllegalKeys  []string `json:"illegal_keys,omitempty"`
	}
	labFile struct {
		File string `json:"file"`
		Ops  int    `json:"ops,omitempty"`
	}
	labHelp struct {
		Commands []string `json:"commands"`
	}
)

type labLinks struct {
	Links []cluster.LinkInfo `json:"links"`
}

func (l labLinks) WriteSimple(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LINK\tDELAY\tJITTER\tLOSS\tCUT\tSENT\tDELIVERED\tDROPPED")
	for _, li := range l.Links {
		fmt.Fprintf(tw, "%d→%d\t%s\t%s\t%g\t%v\t%d\t%d\t%d\n", li.From, li.To, li.Delay, li.Jitter, li.Loss, li.Cut, li.Sent, li.Delivered, li.Dropped)
	}
	return tw.Flush()
}

func (t labText) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintln(w, t.Text)
	return err
}

func (l labLeader) WriteSimple(w io.Writer) error {
	if l.Leader == 0 {
		_, err := fmt.Fprintln(w, "no leader")
		return err
	}
	_, err := fmt.Fprintf(w, "leader %d (term %d)\n", l.Leader, l.Term)
	return err
}

func (r labOpResult) WriteSimple(w io.Writer) error {
	var b strings.Builder
	switch r.Op {
	case "get":
		if *r.Found {
			fmt.Fprintf(&b, "%s = %q", r.Key, *r.Value)
		} else {
			fmt.Fprintf(&b, "%s not found", r.Key)
		}
		fmt.Fprintf(&b, " (%s read at node %d", r.Mode, r.Node)
	case "cas":
		fmt.Fprintf(&b, "cas %s: swapped=%v (node %d", r.Key, *r.Swapped, r.Node)
	case "delete":
		fmt.Fprintf(&b, "deleted %s, existed=%v (node %d", r.Key, *r.Found, r.Node)
	default:
		fmt.Fprintf(&b, "ok (leader %d", r.Node)
	}
	if r.Hops > 0 {
		fmt.Fprintf(&b, ", via node %d", r.Entry)
	}
	fmt.Fprintf(&b, ", %.2fms)\n", r.LatencyMs)
	_, err := io.WriteString(w, b.String())
	return err
}

func (c labCheck) WriteSimple(w io.Writer) error {
	verdict := "linearizable"
	if !c.Linearizable {
		verdict = "NOT linearizable"
		if c.Verdict == "Unknown" {
			verdict = "unknown (checker timed out)"
		}
	}
	var bad string
	if len(c.IllegalKeys) > 0 {
		bad = " (no order explains key " + strings.Join(c.IllegalKeys, ", ") + "; see history FILE.html)"
	}
	_, err := fmt.Fprintf(w, "%s: %d operations on %d keys%s\n", verdict, c.Ops, c.Keys, bad)
	return err
}

func (f labFile) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintf(w, "wrote %s\n", f.File)
	return err
}

func (h labHelp) WriteSimple(w io.Writer) error {
	for _, c := range h.Commands {
		if _, err := fmt.Fprintln(w, c); err != nil {
			return err
		}
	}
	return nil
}

var labCommands = []string{
	"status", "leader", "put K V [--via N]", "get K [--node N] [--mode stale|lease|verify|readindex|log]",
	"cas K OLD NEW", "delete K", "partition A|B[|C]", "isolate N", "cut N M", "heal",
	"delay N M D [--jitter J]", "crash N", "restart N", "pause N D", "resume N", "wait D", "wait leader",
	"bench writes N [--concurrency C]", "check", "history FILE.json|FILE.html", "timeline FILE.json", "links", "help", "exit",
}

// errLabUsage marks a malformed command line.
var errLabUsage = errors.New("usage")

func labUsage(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errLabUsage}, args...)...)
}

// resolveNamedNodes replaces "leader" and "paused" in a partition spec
// like "leader|2,3" by the nodes' numbers.
func (sh *labShell) resolveNamedNodes(spec string) (string, error) {
	groups := strings.Split(spec, "|")
	for i, g := range groups {
		members := strings.Split(g, ",")
		for j, m := range members {
			if m = strings.TrimSpace(m); m == "leader" || m == "paused" {
				id, err := sh.node(m)
				if err != nil {
					return "", err
				}
				members[j] = strconv.Itoa(int(id))
			}
		}
		groups[i] = strings.Join(members, ",")
	}
	return strings.Join(groups, "|"), nil
}

// node parses a node argument: a number, "leader" for the current leader
// or "paused" for the first paused node.
func (sh *labShell) node(s string) (cluster.NodeID, error) {
	if s == "leader" {
		l, _ := sh.c.Leader()
		if l == 0 {
			return 0, fmt.Errorf("no leader now")
		}
		return l, nil
	}
	if s == "paused" {
		for _, ns := range sh.c.Status().Nodes {
			if ns.Paused {
				return ns.ID, nil
			}
		}
		return 0, fmt.Errorf("no node is paused")
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, labUsage("bad node %q", s)
	}
	if n < 1 || n > sh.c.Size() {
		return 0, fmt.Errorf("%w: %d (nodes are 1 to %d)", cluster.ErrUnknownNode, n, sh.c.Size())
	}
	return cluster.NodeID(n), nil
}

func (sh *labShell) nodes(args []string, want int, usage string) ([]cluster.NodeID, error) {
	if len(args) != want {
		return nil, labUsage("%s", usage)
	}
	out := make([]cluster.NodeID, want)
	for i, a := range args {
		id, err := sh.node(a)
		if err != nil {
			return nil, err
		}
		out[i] = id
	}
	return out, nil
}

func duration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, labUsage("bad duration %q", s)
	}
	return d, nil
}

// flagSet parses a command's flags and returns the positional words.
func flagSet(name string, args []string, def func(fs *pflag.FlagSet)) ([]string, error) {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	def(fs)
	if err := fs.Parse(args); err != nil {
		return nil, labUsage("%s: %v", name, err)
	}
	return fs.Args(), nil
}

func (sh *labShell) exec(ctx context.Context, name string, args []string) (any, error) {
	c := sh.c
	switch name {
	case "help":
		return labHelp{Commands: labCommands}, nil
	case "status":
		if len(args) != 0 {
			return nil, labUsage("status")
		}
		return c.Status(), nil
	case "leader":
		l, t := c.Leader()
		return labLeader{Leader: l, Term: t}, nil
	case "put":
		var via string
		pos, err := flagSet(name, args, func(fs *pflag.FlagSet) { fs.StringVar(&via, "via", "", "") })
		if err != nil {
			return nil, err
		}
		if len(pos) != 2 {
			return nil, labUsage("put K V [--via N]")
		}
		op := cluster.Op{Kind: cluster.OpPut, Key: pos[0], Value: pos[1]}
		if via != "" {
			if op.Node, err = sh.node(via); err != nil {
				return nil, err
			}
		}
		return sh.do(ctx, op)
	case "get":
		var nodeN string
		var mode string
		pos, err := flagSet(name, args, func(fs *pflag.FlagSet) {
			fs.StringVar(&nodeN, "node", "", "")
			fs.StringVar(&mode, "mode", string(cluster.ReadIndex), "")
		})
		if err != nil {
			return nil, err
		}
		if len(pos) != 1 {
			return nil, labUsage("get K [--node N] [--mode M]")
		}
		m, err := cluster.ParseReadMode(mode)
		if err != nil {
			return nil, err
		}
		op := cluster.Op{Kind: cluster.OpGet, Key: pos[0], Mode: m}
		if nodeN != "" {
			if op.Node, err = sh.node(nodeN); err != nil {
				return nil, err
			}
		}
		return sh.do(ctx, op)
	case "cas":
		if len(args) != 3 {
			return nil, labUsage("cas K OLD NEW")
		}
		return sh.do(ctx, cluster.Op{Kind: cluster.OpCAS, Key: args[0], Old: args[1], New: args[2]})
	case "delete":
		if len(args) != 1 {
			return nil, labUsage("delete K")
		}
		return sh.do(ctx, cluster.Op{Kind: cluster.OpDelete, Key: args[0]})
	case "partition":
		if len(args) != 1 {
			return nil, labUsage("partition A|B[|C], e.g. partition 1,2|3,4,5")
		}
		spec, err := sh.resolveNamedNodes(args[0])
		if err != nil {
			return nil, err
		}
		groups, err := cluster.ParseGroups(spec)
		if err != nil {
			return nil, err
		}
		if err := c.Partition(groups...); err != nil {
			return nil, err
		}
		return labText{Text: "partitioned " + cluster.FormatGroups(groups)}, nil
	case "isolate":
		ids, err := sh.nodes(args, 1, "isolate N")
		if err != nil {
			return nil, err
		}
		if err := c.Isolate(ids[0]); err != nil {
			return nil, err
		}
		return labText{Text: fmt.Sprintf("isolated node %d", ids[0])}, nil
	case "cut":
		ids, err := sh.nodes(args, 2, "cut N M")
		if err != nil {
			return nil, err
		}
		if err := c.Cut(ids[0], ids[1]); err != nil {
			return nil, err
		}
		return labText{Text: fmt.Sprintf("cut %d→%d (one way)", ids[0], ids[1])}, nil
	case "heal":
		c.Heal()
		return labText{Text: "healed: all cuts removed"}, nil
	case "delay":
		var jitter time.Duration
		pos, err := flagSet(name, args, func(fs *pflag.FlagSet) { fs.DurationVar(&jitter, "jitter", 0, "") })
		if err != nil {
			return nil, err
		}
		if len(pos) != 3 {
			return nil, labUsage("delay N M D [--jitter J]")
		}
		ids, err := sh.nodes(pos[:2], 2, "delay N M D")
		if err != nil {
			return nil, err
		}
		d, err := duration(pos[2])
		if err != nil {
			return nil, err
		}
		if err := c.SetDelay(ids[0], ids[1], d, jitter); err != nil {
			return nil, err
		}
		if err := c.SetDelay(ids[1], ids[0], d, jitter); err != nil {
			return nil, err
		}
		return labText{Text: fmt.Sprintf("delay %d↔%d %s (jitter %s)", ids[0], ids[1], d, jitter)}, nil
	case "crash", "restart", "resume":
		ids, err := sh.nodes(args, 1, name+" N")
		if err != nil {
			return nil, err
		}
		switch name {
		case "crash":
			err = c.Crash(ids[0])
		case "restart":
			err = c.Restart(ids[0])
		default:
			err = c.Resume(ids[0])
		}
		if err != nil {
			return nil, err
		}
		return labText{Text: fmt.Sprintf("%sed node %d", strings.TrimSuffix(name, "e"), ids[0])}, nil
	case "pause":
		if len(args) != 2 {
			return nil, labUsage("pause N D")
		}
		id, err := sh.node(args[0])
		if err != nil {
			return nil, err
		}
		d, err := duration(args[1])
		if err != nil {
			return nil, err
		}
		if err := c.Pause(id, d); err != nil {
			return nil, err
		}
		return labText{Text: fmt.Sprintf("paused node %d for %s", id, d)}, nil
	case "wait":
		if len(args) != 1 {
			return nil, labUsage("wait D | wait leader")
		}
		if args[0] == "leader" {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			start := time.Now()
			l, err := c.WaitLeader(wctx)
			if err != nil {
				return nil, err
			}
			_, term := c.Leader()
			return labText{Text: fmt.Sprintf("leader %d (term %d) after %s", l, term, time.Since(start).Round(time.Millisecond))}, nil
		}
		d, err := duration(args[0])
		if err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(d):
		}
		return labText{Text: "waited " + d.String()}, nil
	case "bench":
		var conc int
		pos, err := flagSet(name, args, func(fs *pflag.FlagSet) { fs.IntVar(&conc, "concurrency", 1, "") })
		if err != nil {
			return nil, err
		}
		if len(pos) != 2 || pos[0] != "writes" {
			return nil, labUsage("bench writes N [--concurrency C]")
		}
		n, err := strconv.Atoi(pos[1])
		if err != nil || n < 1 || conc < 1 {
			return nil, labUsage("bench writes N [--concurrency C]: N and C must be positive")
		}
		return c.BenchWrites(ctx, n, conc, 0, 0), nil
	case "check":
		r := c.Check(30 * time.Second)
		return labCheck{Linearizable: r.Linearizable, Verdict: r.Verdict, Ops: r.Ops, Keys: r.Keys, IllegalKeys: r.IllegalKeys}, nil
	case "history":
		if len(args) != 1 {
			return nil, labUsage("history FILE.json|FILE.html")
		}
		if err := c.ExportHistory(args[0], 30*time.Second); err != nil {
			return nil, err
		}
		return labFile{File: args[0], Ops: len(c.History())}, nil
	case "links":
		if len(args) != 0 {
			return nil, labUsage("links")
		}
		return labLinks{Links: c.Links()}, nil
	case "timeline":
		if len(args) != 1 {
			return nil, labUsage("timeline FILE.json")
		}
		file, err := os.Create(args[0])
		if err != nil {
			return nil, err
		}
		err = c.WriteTimelineJSON(file)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		return labFile{File: args[0]}, nil
	}
	return nil, fmt.Errorf("unknown command %q (try help)", name)
}

func (sh *labShell) do(ctx context.Context, op cluster.Op) (any, error) {
	r, err := sh.client.Do(ctx, op)
	out := labOpResult{Op: string(op.Kind), Key: op.Key, Node: r.Node, Entry: r.Entry, Hops: r.Hops,
		Outcome: string(r.Outcome), LatencyMs: float64(r.Latency.Microseconds()) / 1000}
	switch op.Kind {
	case cluster.OpGet:
		out.Value, out.Found, out.Mode = &r.Value, &r.Found, string(op.Mode)
	case cluster.OpCAS:
		out.Swapped = &r.Swapped
	case cluster.OpDelete:
		out.Found = &r.Found
	}
	if err != nil {
		return labOpFailure{Op: out.Op, Key: out.Key, Outcome: out.Outcome, Entry: out.Entry, LatencyMs: out.LatencyMs}, err
	}
	return out, nil
}

// labOpFailure is printed with the error of an operation that did not succeed.
type labOpFailure struct {
	Op        string         `json:"op"`
	Key       string         `json:"key"`
	Outcome   string         `json:"outcome"`
	Entry     cluster.NodeID `json:"entry"`
	LatencyMs float64        `json:"latency_ms"`
}

// splitWords splits a command line on blanks; double quotes group words.
func splitWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inQuote, have := false, false
	for _, r := range s {
		switch {
		case r == '"':
			inQuote = !inQuote
			have = true
		case !inQuote && (r == ' ' || r == '\t' || r == '\r'):
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if inQuote {
		return nil, labUsage("unterminated quote")
	}
	if have {
		out = append(out, cur.String())
	}
	return out, nil
}
