package lamport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Errors of ParseSteps and Simulate, always wrapped in a *LineError.
var (
	ErrUnknownVerb     = errors.New("lamport: unknown verb")
	ErrArity           = errors.New("lamport: wrong number of words")
	ErrBadNode         = errors.New("lamport: bad node name")
	ErrSelf            = errors.New("lamport: message to self")
	ErrNothingInFlight = errors.New("lamport: receive with no message in flight")
)

// LineError reports a line of a trace script that cannot be parsed or run.
type LineError struct {
	Line int    // 1-based line number
	Text string // the line as written, trimmed
	Err  error  // one of the Err* sentinels, wrapped with detail
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d %q: %v", e.Line, e.Text, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Op is what a step does.
type Op int

// The three kinds of event of the Lamport rules.
const (
	OpLocal Op = iota // a local event: Tick
	OpSend            // send a message to Peer: Send
	OpRecv            // receive the oldest undelivered message from Peer: Receive
)

func (o Op) String() string {
	switch o {
	case OpLocal:
		return "local"
	case OpSend:
		return "send"
	case OpRecv:
		return "recv"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// MarshalText writes the op as local, send or recv.
func (o Op) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// Step is one line of a trace script: "A local", "A send B" or "B recv A".
type Step struct {
	Line int    // 1-based line number in the script; 0 if built in code
	Node NodeID // the node where the event happens
	Op   Op
	Peer NodeID // send: the receiver; recv: the sender; local: empty
}

// String formats s as it is written in a script.
func (s Step) String() string {
	if s.Op == OpLocal {
		return fmt.Sprintf("%s %s", s.Node, s.Op)
	}
	return fmt.Sprintf("%s %s %s", s.Node, s.Op, s.Peer)
}

// Event is a step with the clocks applied.
type Event struct {
	Step
	Index     int       // position in Trace.Events (script order)
	Timestamp Timestamp // Lamport timestamp of the event
	Vector    Vector    // vector clock of the event
	Prior     Time      // the node's Lamport counter before the event
	Received  Time      // recv only: the counter the message carried
	From      int       // recv only: index of the matching send event; -1 otherwise
	To        int       // send only: index of the matching recv event; -1 if still in flight or not a send
}

// Pair is two concurrent events (indices into Trace.Events) that Lamport
// order nevertheless ranks: First before Second.
type Pair struct {
	First, Second int
}

// Trace is a simulated history.
type Trace struct {
	Events     []Event // in script order
	Order      []int   // indices of Events in Lamport (total) order
	Concurrent []Pair  // every concurrent pair, sorted by Lamport order of First, then Second
	InFlight   []int   // indices of send events whose message was never received
}

// ParseTrace reads a script and simulates it: ParseSteps then Simulate.
func ParseTrace(r io.Reader) (*Trace, error) {
	steps, err := ParseSteps(r)
	if err != nil {
		return nil, err
	}
	return Simulate(steps)
}

// ParseSteps reads a script, one event a line:
//
//	A local      # a local event on A
//	A send B     # A sends a message to B
//	B recv A     # B receives the oldest undelivered message from A
//
// Blank lines and text after # are ignored. A malformed line is reported as
// a *LineError wrapping ErrUnknownVerb, ErrArity, ErrBadNode or ErrSelf.
// Whether a receive has a message to receive is checked by Simulate.
func ParseSteps(r io.Reader) ([]Step, error) {
	var steps []Step
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		s, err := parseStep(text)
		if err != nil {
			return nil, &LineError{Line: line, Text: text, Err: err}
		}
		s.Line = line
		steps = append(steps, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("lamport: read trace: %w", err)
	}
	return steps, nil
}

func parseStep(text string) (Step, error) {
	words := strings.Fields(text)
	if len(words) < 2 {
		return Step{}, fmt.Errorf("%w: want \"NODE local\", \"NODE send PEER\" or \"NODE recv PEER\"", ErrArity)
	}
	s := Step{Node: NodeID(words[0])}
	want := 3
	switch words[1] {
	case "local":
		s.Op, want = OpLocal, 2
	case "send":
		s.Op = OpSend
	case "recv", "receive":
		s.Op = OpRecv
	default:
		return Step{}, fmt.Errorf("%w %q: want local, send or recv", ErrUnknownVerb, words[1])
	}
	if len(words) != want {
		return Step{}, fmt.Errorf("%w: %q takes %d, got %d", ErrArity, words[1], want, len(words))
	}
	if want == 3 {
		s.Peer = NodeID(words[2])
	}
	for _, n := range []NodeID{s.Node, s.Peer} {
		if strings.ContainsAny(string(n), "(),:{}") {
			return Step{}, fmt.Errorf("%w %q: must not contain ( ) , : { }", ErrBadNode, n)
		}
	}
	if s.Op != OpLocal && s.Peer == s.Node {
		return Step{}, fmt.Errorf("%w: %s cannot %s itself", ErrSelf, s.Node, s.Op)
	}
	return s, nil
}

// Simulate applies the Lamport and vector clock rules to steps in order, one
// clock per node, starting at zero. Messages between a pair of nodes are
// delivered in the order they were sent. A receive with nothing in flight
// from its peer is a *LineError wrapping ErrNothingInFlight; a step that
// sends to or receives from itself wraps ErrSelf.
func Simulate(steps []Step) (*Trace, error) {
	type link struct{ from, to NodeID }
	clocks := map[NodeID]*Clock{}
	vectors := map[NodeID]Vector{}
	queues := map[link][]int{}
	tr := &Trace{Events: make([]Event, 0, len(steps))}
	for i, s := range steps {
		if s.Op != OpLocal && s.Peer == s.Node {
			return nil, &LineError{Line: s.Line, Text: s.String(), Err: fmt.Errorf("%w: %s cannot %s itself", ErrSelf, s.Node, s.Op)}
		}
		c := clocks[s.Node]
		if c == nil {
			c = new(Clock)
			clocks[s.Node] = c
		}
		e := Event{Step: s, Index: i, Prior: c.Time(), From: -1, To: -1}
		var counter Time
		switch s.Op {
		case OpLocal:
			counter = c.Tick()
			e.Vector = vectors[s.Node].Increment(s.Node)
		case OpSend:
			counter = c.Send()
			e.Vector = vectors[s.Node].Increment(s.Node)
			l := link{s.Node, s.Peer}
			queues[l] = append(queues[l], i)
		case OpRecv:
			l := link{s.Peer, s.Node}
			q := queues[l]
			if len(q) == 0 {
				return nil, &LineError{Line: s.Line, Text: s.String(), Err: fmt.Errorf("%w from %s to %s", ErrNothingInFlight, s.Peer, s.Node)}
			}
			send := q[0]
			queues[l] = q[1:]
			msg := &tr.Events[send]
			msg.To = i
			e.From = send
			e.Received = msg.Timestamp.Counter
			counter = c.Receive(e.Received)
			e.Vector = vectors[s.Node].Merge(msg.Vector).Increment(s.Node)
		default:
			return nil, &LineError{Line: s.Line, Text: s.String(), Err: fmt.Errorf("%w %v", ErrUnknownVerb, s.Op)}
		}
		vectors[s.Node] = e.Vector
		e.Timestamp = Timestamp{Counter: counter, Node: s.Node}
		tr.Events = append(tr.Events, e)
	}

	tr.Order = make([]int, len(tr.Events))
	for i := range tr.Order {
		tr.Order[i] = i
	}
	sort.SliceStable(tr.Order, func(a, b int) bool {
		return tr.Events[tr.Order[a]].Timestamp.Less(tr.Events[tr.Order[b]].Timestamp)
	})
	for a, i := range tr.Order {
		for _, j := range tr.Order[a+1:] {
			if tr.Events[i].Vector.Compare(tr.Events[j].Vector) == Concurrent {
				tr.Concurrent = append(tr.Concurrent, Pair{First: i, Second: j})
			}
		}
	}
	for i, e := range tr.Events {
		if e.Op == OpSend && e.To < 0 {
			tr.InFlight = append(tr.InFlight, i)
		}
	}
	return tr, nil
}

// Relation returns how event i relates to event j in the causal order, by
// their vector clocks: Before means i happened before j.
func (t *Trace) Relation(i, j int) Ordering {
	return t.Events[i].Vector.Compare(t.Events[j].Vector)
}
