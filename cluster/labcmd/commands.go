package labcmd

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/coordkit/coordkit/cluster"
)

// spec is one command of the language: how to parse it, how to run it and
// how to describe it. The table below is the only list of commands.
type spec struct {
	name    string
	aliases []string
	// usage lines, as the help command lists them.
	usage []string
	// synopsis and doc form the command's block of Help; a command whose
	// block a neighbour shares ("crash N | restart N") has none.
	synopsis string
	doc      []string
	parse    func(name string, args []string) (Command, error)
	exec     func(s *Session, ctx context.Context, cmd Command) (Result, error)
}

// table returns the commands in the order help lists them. A function, not
// a package variable: the help command's exec refers back to the table.
func table() []spec {
	return []spec{
		{name: "status", usage: []string{"status"},
			synopsis: "status", doc: []string{"each node's state, term, commit/applied index,", "whom it reaches, and whether a quorum exists"},
			parse: parseNoArgs("status"), exec: (*Session).status},
		{name: "leader", usage: []string{"leader"},
			synopsis: "leader", doc: []string{"the current leader and term"},
			parse: parseAnyArgs, exec: (*Session).leader},
		{name: "put", usage: []string{"put K V [--via N]"},
			synopsis: "put K V [--via N]", doc: []string{"write; --via sends it to node N, which", "forwards it to the leader if it is not"},
			parse: parsePut, exec: (*Session).put},
		{name: "get", usage: []string{"get K [--node N] [--mode stale|lease|verify|readindex|log]"},
			synopsis: "get K [--node N] [--mode M]", doc: []string{"read; M is stale, lease, verify, readindex", "(default) or log; --node asks node N"},
			parse: parseGet, exec: (*Session).get},
		{name: "cas", usage: []string{"cas K OLD NEW"},
			synopsis: "cas K OLD NEW", doc: []string{"compare-and-set"},
			parse: parseCAS, exec: (*Session).cas},
		{name: "delete", usage: []string{"delete K"},
			synopsis: "delete K", doc: []string{"delete"},
			parse: parseDelete, exec: (*Session).delete},
		{name: "partition", usage: []string{"partition A|B[|C]"},
			synopsis: "partition A|B[|C]", doc: []string{"cut every link between groups (e.g. 1,2|3,4,5)"},
			parse: parsePartition, exec: (*Session).partition},
		{name: "isolate", usage: []string{"isolate N"},
			synopsis: "isolate N", doc: []string{"cut N off from everyone"},
			parse: parseNodeArgs(1, "isolate N"), exec: (*Session).isolate},
		{name: "cut", usage: []string{"cut N M [--both]"},
			synopsis: "cut N M [--both]", doc: []string{"drop messages N→M (one way; --both: and M→N)"},
			parse: parseLinkArgs("cut N M [--both]"), exec: (*Session).cut},
		{name: "heal", usage: []string{"heal", "heal N M [--both]"},
			synopsis: "heal [N M [--both]]", doc: []string{"remove every cut (delays stay); with N M only", "the cut N→M (--both: and M→N)"},
			parse: parseHeal, exec: (*Session).heal},
		{name: "delay", usage: []string{"delay N M D [--jitter J]"},
			synopsis: "delay N M D [--jitter J]", doc: []string{"one-way delay D on N→M and M→N"},
			parse: parseDelay, exec: (*Session).delay},
		{name: "crash", usage: []string{"crash N"},
			synopsis: "crash N | restart N", doc: []string{"stop node N (its log survives) / start it again"},
			parse: parseNodeArgs(1, "crash N"), exec: (*Session).crash},
		{name: "restart", usage: []string{"restart N"},
			parse: parseNodeArgs(1, "restart N"), exec: (*Session).restart},
		{name: "pause", usage: []string{"pause N D"},
			synopsis: "pause N D | resume N", doc: []string{"freeze N for D: it neither sends, receives", "nor applies; requests wait for it"},
			parse: parsePause, exec: (*Session).pause},
		{name: "resume", usage: []string{"resume N"},
			parse: parseNodeArgs(1, "resume N"), exec: (*Session).resume},
		{name: "wait", usage: []string{"wait D", "wait leader"},
			synopsis: "wait D | wait leader", doc: []string{"sleep D; or wait (up to 10s) for a leader", "with a quorum"},
			parse: parseWait, exec: (*Session).wait},
		{name: "bench", usage: []string{"bench writes N [--concurrency C]"},
			synopsis: "bench writes N [--concurrency C]", doc: []string{"N generated writes, throughput and latency"},
			parse: parseBench, exec: (*Session).bench},
		{name: "load", usage: []string{"load R[/s]", "load off", "load"},
			synopsis: "load R[/s] | load off | load", doc: []string{"a background write load of R generated puts/s", "(64 clients); off stops it; bare: live figures"},
			parse: parseLoad, exec: (*Session).load},
		{name: "check", usage: []string{"check"},
			synopsis: "check", doc: []string{"check the history so far with porcupine"},
			parse: parseAnyArgs, exec: (*Session).check},
		{name: "history", usage: []string{"history FILE.json|FILE.html"},
			synopsis: "history FILE.json|FILE.html", doc: []string{"export the history (JSON, or porcupine's view)"},
			parse: parseFile("history FILE.json|FILE.html"), exec: (*Session).history},
		{name: "timeline", usage: []string{"timeline FILE.json"},
			synopsis: "timeline FILE.json", doc: []string{"export the timeline of events"},
			parse: parseFile("timeline FILE.json"), exec: (*Session).timeline},
		{name: "links", usage: []string{"links"},
			synopsis: "links", doc: []string{"every directed link: delay, jitter, loss,", "cut, and messages sent/delivered/dropped"},
			parse: parseNoArgs("links"), exec: (*Session).links},
		{name: "help", usage: []string{"help"},
			synopsis: "help", doc: []string{"this list"},
			parse: parseAnyArgs, exec: (*Session).help},
		{name: "exit", aliases: []string{"quit"}, usage: []string{"exit"},
			parse: parseAnyArgs, exec: (*Session).exit},
	}
}

func lookup(name string) (spec, bool) {
	for _, sp := range table() {
		if sp.name == name {
			return sp, true
		}
		for _, a := range sp.aliases {
			if a == name {
				return sp, true
			}
		}
	}
	return spec{}, false
}

// Commands returns the usage line of every command, in the order the help
// command prints them.
func Commands() []string {
	var out []string
	for _, sp := range table() {
		out = append(out, sp.usage...)
	}
	return out
}

// Help returns the described list of commands, one block per command with
// its synopsis and what it does, as `coordctl lab --help` shows it. Lines
// are indented by two spaces and end in a newline.
func Help() string {
	var b strings.Builder
	for _, sp := range table() {
		for i, line := range sp.doc {
			left := ""
			if i == 0 {
				left = sp.synopsis
			}
			fmt.Fprintf(&b, "  %-30s  %s\n", left, line)
		}
	}
	return b.String()
}

// Parsers.

func parseAnyArgs(string, []string) (Command, error) { return Command{}, nil }

func parseNoArgs(usage string) func(string, []string) (Command, error) {
	return func(_ string, args []string) (Command, error) {
		if len(args) != 0 {
			return Command{}, usagef("%s", usage)
		}
		return Command{}, nil
	}
}

func parseNodeArgs(n int, usage string) func(string, []string) (Command, error) {
	return func(_ string, args []string) (Command, error) {
		nodes, err := parseNodes(args, n, usage)
		return Command{Nodes: nodes}, err
	}
}

// parseLinkArgs parses "N M [--both]".
func parseLinkArgs(usage string) func(string, []string) (Command, error) {
	return func(name string, args []string) (Command, error) {
		var both bool
		pos, err := parseFlags(name, args, func(fs *pflag.FlagSet) { fs.BoolVar(&both, "both", false, "") })
		if err != nil {
			return Command{}, err
		}
		nodes, err := parseNodes(pos, 2, usage)
		return Command{Nodes: nodes, Both: both}, err
	}
}

// parseHeal parses "heal" (every cut) or "heal N M [--both]".
func parseHeal(name string, args []string) (Command, error) {
	if len(args) == 0 {
		return Command{}, nil
	}
	return parseLinkArgs("heal N M [--both]")(name, args)
}

func parseFile(usage string) func(string, []string) (Command, error) {
	return func(_ string, args []string) (Command, error) {
		if len(args) != 1 {
			return Command{}, usagef("%s", usage)
		}
		return Command{File: args[0]}, nil
	}
}

func parsePut(name string, args []string) (Command, error) {
	var via string
	pos, err := parseFlags(name, args, func(fs *pflag.FlagSet) { fs.StringVar(&via, "via", "", "") })
	if err != nil {
		return Command{}, err
	}
	if len(pos) != 2 {
		return Command{}, usagef("put K V [--via N]")
	}
	cmd := Command{Key: pos[0], Value: pos[1]}
	if via != "" {
		r, err := parseNode(via)
		if err != nil {
			return Command{}, err
		}
		cmd.Nodes = []NodeRef{r}
	}
	return cmd, nil
}

func parseGet(name string, args []string) (Command, error) {
	var node, mode string
	pos, err := parseFlags(name, args, func(fs *pflag.FlagSet) {
		fs.StringVar(&node, "node", "", "")
		fs.StringVar(&mode, "mode", string(cluster.ReadIndex), "")
	})
	if err != nil {
		return Command{}, err
	}
	if len(pos) != 1 {
		return Command{}, usagef("get K [--node N] [--mode M]")
	}
	m, err := cluster.ParseReadMode(mode)
	if err != nil {
		return Command{}, err
	}
	cmd := Command{Key: pos[0], Mode: m}
	if node != "" {
		r, err := parseNode(node)
		if err != nil {
			return Command{}, err
		}
		cmd.Nodes = []NodeRef{r}
	}
	return cmd, nil
}

func parseCAS(_ string, args []string) (Command, error) {
	if len(args) != 3 {
		return Command{}, usagef("cas K OLD NEW")
	}
	return Command{Key: args[0], Old: args[1], New: args[2]}, nil
}

func parseDelete(_ string, args []string) (Command, error) {
	if len(args) != 1 {
		return Command{}, usagef("delete K")
	}
	return Command{Key: args[0]}, nil
}

func parsePartition(_ string, args []string) (Command, error) {
	if len(args) != 1 {
		return Command{}, usagef("partition A|B[|C], e.g. partition 1,2|3,4,5")
	}
	return Command{Groups: args[0]}, nil
}

func parseDelay(name string, args []string) (Command, error) {
	var jitter time.Duration
	pos, err := parseFlags(name, args, func(fs *pflag.FlagSet) { fs.DurationVar(&jitter, "jitter", 0, "") })
	if err != nil {
		return Command{}, err
	}
	if len(pos) != 3 {
		return Command{}, usagef("delay N M D [--jitter J]")
	}
	nodes, err := parseNodes(pos[:2], 2, "delay N M D")
	if err != nil {
		return Command{}, err
	}
	d, err := parseDuration(pos[2])
	if err != nil {
		return Command{}, err
	}
	return Command{Nodes: nodes, Duration: d, Jitter: jitter}, nil
}

func parsePause(_ string, args []string) (Command, error) {
	if len(args) != 2 {
		return Command{}, usagef("pause N D")
	}
	r, err := parseNode(args[0])
	if err != nil {
		return Command{}, err
	}
	d, err := parseDuration(args[1])
	if err != nil {
		return Command{}, err
	}
	return Command{Nodes: []NodeRef{r}, Duration: d}, nil
}

func parseWait(_ string, args []string) (Command, error) {
	if len(args) != 1 {
		return Command{}, usagef("wait D | wait leader")
	}
	if args[0] == "leader" {
		return Command{WaitLeader: true}, nil
	}
	d, err := parseDuration(args[0])
	if err != nil {
		return Command{}, err
	}
	return Command{Duration: d}, nil
}

func parseBench(name string, args []string) (Command, error) {
	var conc int
	pos, err := parseFlags(name, args, func(fs *pflag.FlagSet) { fs.IntVar(&conc, "concurrency", 1, "") })
	if err != nil {
		return Command{}, err
	}
	if len(pos) != 2 || pos[0] != "writes" {
		return Command{}, usagef("bench writes N [--concurrency C]")
	}
	n, err := strconv.Atoi(pos[1])
	if err != nil || n < 1 || conc < 1 {
		return Command{}, usagef("bench writes N [--concurrency C]: N and C must be positive")
	}
	return Command{Count: n, Concurrency: conc}, nil
}

// Executors: one per command, each given a parsed Command.

func (s *Session) status(context.Context, Command) (Result, error) {
	return StatusResult{s.c.Status()}, nil
}

func (s *Session) leader(context.Context, Command) (Result, error) {
	l, t := s.c.Leader()
	return LeaderResult{Leader: l, Term: t}, nil
}

func (s *Session) put(ctx context.Context, cmd Command) (Result, error) {
	op := cluster.Op{Kind: cluster.OpPut, Key: cmd.Key, Value: cmd.Value}
	if len(cmd.Nodes) > 0 {
		id, err := s.node(cmd.Nodes[0])
		if err != nil {
			return nil, err
		}
		op.Node = id
	}
	return s.do(ctx, op)
}

func (s *Session) get(ctx context.Context, cmd Command) (Result, error) {
	mode := cmd.Mode
	if mode == "" {
		mode = cluster.ReadIndex
	}
	op := cluster.Op{Kind: cluster.OpGet, Key: cmd.Key, Mode: mode}
	if len(cmd.Nodes) > 0 {
		id, err := s.node(cmd.Nodes[0])
		if err != nil {
			return nil, err
		}
		op.Node = id
	}
	return s.do(ctx, op)
}

func (s *Session) cas(ctx context.Context, cmd Command) (Result, error) {
	return s.do(ctx, cluster.Op{Kind: cluster.OpCAS, Key: cmd.Key, Old: cmd.Old, New: cmd.New})
}

func (s *Session) delete(ctx context.Context, cmd Command) (Result, error) {
	return s.do(ctx, cluster.Op{Kind: cluster.OpDelete, Key: cmd.Key})
}

func (s *Session) partition(_ context.Context, cmd Command) (Result, error) {
	spec, err := s.resolveGroups(cmd.Groups)
	if err != nil {
		return nil, err
	}
	groups, err := cluster.ParseGroups(spec)
	if err != nil {
		return nil, err
	}
	if err := s.c.Partition(groups...); err != nil {
		return nil, err
	}
	return Text{Message: "partitioned " + cluster.FormatGroups(groups)}, nil
}

func (s *Session) isolate(_ context.Context, cmd Command) (Result, error) {
	ids, err := s.nodes(cmd, 1)
	if err != nil {
		return nil, err
	}
	if err := s.c.Isolate(ids[0]); err != nil {
		return nil, err
	}
	return Text{Message: fmt.Sprintf("isolated node %d", ids[0])}, nil
}

func (s *Session) cut(_ context.Context, cmd Command) (Result, error) {
	ids, err := s.nodes(cmd, 2)
	if err != nil {
		return nil, err
	}
	if err := s.c.Cut(ids[0], ids[1]); err != nil {
		return nil, err
	}
	if cmd.Both {
		if err := s.c.Cut(ids[1], ids[0]); err != nil {
			return nil, err
		}
		return Text{Message: fmt.Sprintf("cut %d↔%d (both ways)", ids[0], ids[1])}, nil
	}
	return Text{Message: fmt.Sprintf("cut %d→%d (one way)", ids[0], ids[1])}, nil
}

func (s *Session) heal(_ context.Context, cmd Command) (Result, error) {
	if len(cmd.Nodes) == 0 {
		s.c.Heal()
		return Text{Message: "healed: all cuts removed"}, nil
	}
	ids, err := s.nodes(cmd, 2)
	if err != nil {
		return nil, err
	}
	uncut := func(from, to cluster.NodeID) error {
		l := s.c.Link(from, to)
		l.Cut = false
		return s.c.SetLink(from, to, l)
	}
	if err := uncut(ids[0], ids[1]); err != nil {
		return nil, err
	}
	if cmd.Both {
		if err := uncut(ids[1], ids[0]); err != nil {
			return nil, err
		}
		return Text{Message: fmt.Sprintf("healed %d↔%d (both ways)", ids[0], ids[1])}, nil
	}
	return Text{Message: fmt.Sprintf("healed %d→%d (one way)", ids[0], ids[1])}, nil
}

func (s *Session) delay(_ context.Context, cmd Command) (Result, error) {
	ids, err := s.nodes(cmd, 2)
	if err != nil {
		return nil, err
	}
	if err := s.c.SetDelay(ids[0], ids[1], cmd.Duration, cmd.Jitter); err != nil {
		return nil, err
	}
	if err := s.c.SetDelay(ids[1], ids[0], cmd.Duration, cmd.Jitter); err != nil {
		return nil, err
	}
	return Text{Message: fmt.Sprintf("delay %d↔%d %s (jitter %s)", ids[0], ids[1], cmd.Duration, cmd.Jitter)}, nil
}

// nodeAction runs one of crash, restart and resume on the command's node
// and reports it as "<past tense> node N".
func (s *Session) nodeAction(cmd Command, past string, act func(cluster.NodeID) error) (Result, error) {
	ids, err := s.nodes(cmd, 1)
	if err != nil {
		return nil, err
	}
	if err := act(ids[0]); err != nil {
		return nil, err
	}
	return Text{Message: fmt.Sprintf("%s node %d", past, ids[0])}, nil
}

func (s *Session) crash(_ context.Context, cmd Command) (Result, error) {
	return s.nodeAction(cmd, "crashed", s.c.Crash)
}

func (s *Session) restart(_ context.Context, cmd Command) (Result, error) {
	return s.nodeAction(cmd, "restarted", s.c.Restart)
}

func (s *Session) resume(_ context.Context, cmd Command) (Result, error) {
	return s.nodeAction(cmd, "resumed", s.c.Resume)
}

func (s *Session) pause(_ context.Context, cmd Command) (Result, error) {
	ids, err := s.nodes(cmd, 1)
	if err != nil {
		return nil, err
	}
	if err := s.c.Pause(ids[0], cmd.Duration); err != nil {
		return nil, err
	}
	return Text{Message: fmt.Sprintf("paused node %d for %s", ids[0], cmd.Duration)}, nil
}

// waitLeaderLimit bounds "wait leader".
const waitLeaderLimit = 10 * time.Second

func (s *Session) wait(ctx context.Context, cmd Command) (Result, error) {
	if cmd.WaitLeader {
		wctx, cancel := context.WithTimeout(ctx, waitLeaderLimit)
		defer cancel()
		start := time.Now()
		l, err := s.c.WaitLeader(wctx)
		if err != nil {
			return nil, err
		}
		_, term := s.c.Leader()
		return Text{Message: fmt.Sprintf("leader %d (term %d) after %s", l, term, time.Since(start).Round(time.Millisecond))}, nil
	}
	t := time.NewTimer(cmd.Duration)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	return Text{Message: "waited " + cmd.Duration.String()}, nil
}

func (s *Session) bench(ctx context.Context, cmd Command) (Result, error) {
	return BenchResult{s.c.BenchWrites(ctx, cmd.Count, cmd.Concurrency, 0, 0)}, nil
}

// checkLimit bounds porcupine's search in check and history.
const checkLimit = 30 * time.Second

func (s *Session) check(context.Context, Command) (Result, error) {
	r := s.c.Check(checkLimit)
	return CheckResult{Linearizable: r.Linearizable, Verdict: r.Verdict, Ops: r.Ops, Keys: r.Keys, IllegalKeys: r.IllegalKeys}, nil
}

func (s *Session) history(_ context.Context, cmd Command) (Result, error) {
	if err := s.c.ExportHistory(cmd.File, checkLimit); err != nil {
		return nil, err
	}
	return FileResult{File: cmd.File, Ops: len(s.c.History())}, nil
}

func (s *Session) timeline(_ context.Context, cmd Command) (Result, error) {
	file, err := os.Create(cmd.File)
	if err != nil {
		return nil, err
	}
	err = s.c.WriteTimelineJSON(file)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return FileResult{File: cmd.File}, nil
}

func (s *Session) links(context.Context, Command) (Result, error) {
	return LinksResult{Links: s.c.Links()}, nil
}

func (s *Session) help(context.Context, Command) (Result, error) {
	return HelpResult{Commands: Commands()}, nil
}

func (s *Session) exit(context.Context, Command) (Result, error) { return nil, nil }
