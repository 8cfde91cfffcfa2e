package labcmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/coordkit/coordkit/cluster"
)

// Session runs commands against one cluster through one client, so that
// successive operations of a session appear as one client in the history.
// It is not safe for concurrent use, except Load. A session with a write
// load running ("load R") must be closed with Close.
type Session struct {
	c      *cluster.Cluster
	client *cluster.Client

	loadMu   sync.Mutex // guards ld and lastLoad: Load is called concurrently
	ld       *loader
	lastLoad LoadStats
}

// NewSession returns a session on c. It returns ErrNilCluster if c is nil.
func NewSession(c *cluster.Cluster) (*Session, error) {
	if c == nil {
		return nil, ErrNilCluster
	}
	return &Session{c: c, client: c.NewClient(0)}, nil
}

// Exec runs cmd. Exec of the zero Command and of exit does nothing and
// returns (nil, nil). Errors are those of the cluster (cluster.ErrUnknownNode,
// ErrNoLeader, ErrNoPausedNode, no quorum, …) or ctx's. When a client
// operation (put, get, cas, delete) fails, Exec returns an OpFailure with
// the error, saying what the client knows (outcome, latency).
func (s *Session) Exec(ctx context.Context, cmd Command) (Result, error) {
	if cmd.Name == "" {
		return nil, nil
	}
	sp, ok := lookup(cmd.Name)
	if !ok {
		return nil, fmt.Errorf("%w %q (try help)", ErrUnknownCommand, cmd.Name)
	}
	return sp.exec(s, ctx, cmd)
}

// Run parses and runs one line and returns what the shell prints for it. A
// parse error is reported in Output.Err (a *ParseError). Check the line
// with Parse first if blank lines or exit need handling: Run returns the
// zero Output for them.
func (s *Session) Run(ctx context.Context, line string) Output {
	cmd, err := Parse(line)
	if err != nil {
		var pe *ParseError
		errors.As(err, &pe)
		return Output{Cmd: pe.Cmd, Err: err}
	}
	if cmd.Name == "" || cmd.Exit() {
		return Output{}
	}
	res, err := s.Exec(ctx, cmd)
	return Output{Cmd: cmd.Name, Result: res, Err: err}
}

// node resolves a node argument against the cluster as it is now.
func (s *Session) node(r NodeRef) (cluster.NodeID, error) {
	switch r {
	case NodeLeader:
		l, _ := s.c.Leader()
		if l == 0 {
			return 0, ErrNoLeader
		}
		return l, nil
	case NodePaused:
		for _, ns := range s.c.Status().Nodes {
			if ns.Paused {
				return ns.ID, nil
			}
		}
		return 0, ErrNoPausedNode
	}
	n, err := strconv.Atoi(string(r))
	if err != nil {
		return 0, usagef("bad node %q", string(r))
	}
	if n < 1 || n > s.c.Size() {
		return 0, fmt.Errorf("%w: %d (nodes are 1 to %d)", cluster.ErrUnknownNode, n, s.c.Size())
	}
	return cluster.NodeID(n), nil
}

// nodes resolves a command's node arguments; a Command built by hand
// rather than by Parse may lack some.
func (s *Session) nodes(cmd Command, want int) ([]cluster.NodeID, error) {
	refs := cmd.Nodes
	if len(refs) != want {
		return nil, usagef("%s: want %d node arguments, have %d", cmd.Name, want, len(refs))
	}
	out := make([]cluster.NodeID, len(refs))
	for i, r := range refs {
		id, err := s.node(r)
		if err != nil {
			return nil, err
		}
		out[i] = id
	}
	return out, nil
}

// resolveGroups replaces "leader" and "paused" in a partition spec like
// "leader|2,3" by the nodes' numbers.
func (s *Session) resolveGroups(spec string) (string, error) {
	groups := strings.Split(spec, "|")
	for i, g := range groups {
		members := strings.Split(g, ",")
		for j, m := range members {
			if r := NodeRef(strings.TrimSpace(m)); r == NodeLeader || r == NodePaused {
				id, err := s.node(r)
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

func (s *Session) do(ctx context.Context, op cluster.Op) (Result, error) {
	r, err := s.client.Do(ctx, op)
	out := OpResult{Op: string(op.Kind), Key: op.Key, Node: r.Node, Entry: r.Entry, Hops: r.Hops,
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
		return OpFailure{Op: out.Op, Key: out.Key, Outcome: out.Outcome, Entry: out.Entry, LatencyMs: out.LatencyMs}, err
	}
	return out, nil
}

// Cluster is the cluster the session runs on.
func (s *Session) Cluster() *cluster.Cluster { return s.c }
