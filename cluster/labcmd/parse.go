package labcmd

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/coordkit/coordkit/cluster"
)

// NodeRef is a node argument as typed: a number, or one of the names
// NodeLeader and NodePaused, which Exec resolves when the command runs.
// Parse accepts only these forms; whether a number names an existing node
// is decided by Exec.
type NodeRef string

// Node names a command line may use instead of a number.
const (
	// NodeLeader is the node that leads, in the highest term, when the
	// command runs.
	NodeLeader NodeRef = "leader"
	// NodePaused is the lowest-numbered paused node.
	NodePaused NodeRef = "paused"
)

// Command is one parsed line. Name says which command it is; the other
// fields hold its arguments, and a command uses only those its usage names
// (see Commands). The zero Command (Name "") is a blank line: Exec does
// nothing with it.
type Command struct {
	// Name is the command: "put", "get", "partition", …, "exit".
	Name string
	// Key, Value, Old and New are the operands of put, get, cas, delete.
	Key, Value, Old, New string
	// Mode is get's read mode (default cluster.ReadIndex).
	Mode cluster.ReadMode
	// Nodes are the node arguments in order: put --via, get --node, the
	// N and M of isolate, cut, heal, delay, crash, restart, pause, resume.
	Nodes []NodeRef
	// Groups is partition's spec as typed, e.g. "leader|2,3"; Exec resolves
	// the names in it and parses it with cluster.ParseGroups.
	Groups string
	// Duration is the D of delay, pause and wait; Jitter is delay's --jitter.
	Duration, Jitter time.Duration
	// WaitLeader is set by "wait leader".
	WaitLeader bool
	// Count and Concurrency are bench's N and --concurrency.
	Count, Concurrency int
	// File is the file of history and timeline.
	File string
	// Both is cut's and heal's --both: the link in both directions.
	Both bool
	// Rate is load's R (writes/s); LoadOff is set by "load off". Neither:
	// a bare "load", which reports.
	Rate    int
	LoadOff bool
}

// Exit reports whether the command asks the shell to end ("exit", "quit").
func (c Command) Exit() bool { return c.Name == "exit" }

// Parse parses one line. A "#" starts a comment; double quotes group words.
// A blank or comment-only line gives the zero Command and no error. Errors
// are *ParseError wrapping ErrUnknownCommand, ErrUsage or cluster.ErrBadMode;
// their text is what the lab shell prints.
func Parse(line string) (Command, error) {
	if i := strings.Index(line, "#"); i >= 0 {
		line = line[:i]
	}
	words, err := splitWords(line)
	if err != nil {
		return Command{}, &ParseError{Err: err}
	}
	if len(words) == 0 {
		return Command{}, nil
	}
	name, args := words[0], words[1:]
	sp, ok := lookup(name)
	if !ok {
		return Command{}, &ParseError{Cmd: name, Err: fmt.Errorf("%w %q (try help)", ErrUnknownCommand, name)}
	}
	cmd, err := sp.parse(name, args)
	if err != nil {
		return Command{}, &ParseError{Cmd: name, Err: err}
	}
	cmd.Name = sp.name
	return cmd, nil
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
		return nil, usagef("unterminated quote")
	}
	if have {
		out = append(out, cur.String())
	}
	return out, nil
}

// parseNode checks the form of a node argument.
func parseNode(s string) (NodeRef, error) {
	if r := NodeRef(s); r == NodeLeader || r == NodePaused {
		return r, nil
	}
	if _, err := strconv.Atoi(s); err != nil {
		return "", usagef("bad node %q", s)
	}
	return NodeRef(s), nil
}

// parseNodes checks that args are exactly want node arguments.
func parseNodes(args []string, want int, usage string) ([]NodeRef, error) {
	if len(args) != want {
		return nil, usagef("%s", usage)
	}
	out := make([]NodeRef, want)
	for i, a := range args {
		r, err := parseNode(a)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, usagef("bad duration %q", s)
	}
	return d, nil
}

// parseFlags parses a command's flags and returns the positional words.
func parseFlags(name string, args []string, def func(fs *pflag.FlagSet)) ([]string, error) {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	def(fs)
	if err := fs.Parse(args); err != nil {
		// pflag reads "-5ms" as the shorthand flags 5, m, s.
		for _, a := range args {
			if a == "--" {
				break
			}
			if len(a) > 1 && a[0] == '-' && (a[1] >= '0' && a[1] <= '9' || a[1] == '.') {
				return nil, usagef("%s: %s is not a flag: a duration or count cannot be negative, and a value that starts with \"-\" goes after --", name, a)
			}
		}
		return nil, usagef("%s: %v", name, err)
	}
	return fs.Args(), nil
}
