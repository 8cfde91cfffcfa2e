package lamport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Errors of ParseSteps and Simulate, always wrapped in a *LineError.
var (
	ErrUnknownVerb     = errors.New("lamport: unknown verb")
	ErrArity           = errors.New("lamport: wrong number of words")
	ErrBadNode         = errors.New("lamport: bad node name")
	ErrSelf            = errors.New("lamport: message to self")
	ErrNothingInFlight = errors.New("lamport: receive with no message in flight")
	ErrLineTooLong     = errors.New("lamport: line too long")
)

// MaxLineLen is the longest line, in bytes without its line ending, that
// ParseSteps reads; a longer one is a *LineError wrapping ErrLineTooLong.
const MaxLineLen = 64 << 10

// LineError reports a line of a trace script that cannot be parsed or run.
type LineError struct {
	Line int    // 1-based line number
	Text string // the line as written, trimmed; empty for a line too long to quote
	Err  error  // one of the Err* sentinels, wrapped with detail
}

func (e *LineError) Error() string {
	if e.Text == "" {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("line %d %q: %v", e.Line, e.Text, e.Err)
}
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
// Blank lines and text after # are ignored; a UTF-8 byte order mark at the
// start of the script is stripped; lines may end in \n or \r\n. A malformed
// line is reported as a *LineError wrapping ErrUnknownVerb, ErrArity,
// ErrBadNode (also for a node name with a control character such as NUL, a
// byte order mark or invalid UTF-8), ErrSelf or ErrLineTooLong (a line over
// MaxLineLen bytes). Whether a receive has a message to receive is checked
// by Simulate.
func ParseSteps(r io.Reader) ([]Step, error) {
	var steps []Step
	br := bufio.NewReader(r)
	line := 0
	for {
		raw, err := readLine(br)
		if errors.Is(err, io.EOF) {
			break
		}
		line++
		if errors.Is(err, ErrLineTooLong) {
			return nil, &LineError{Line: line, Err: fmt.Errorf("%w (over %d bytes)", ErrLineTooLong, MaxLineLen)}
		}
		if err != nil {
			return nil, fmt.Errorf("lamport: read trace: %w", err)
		}
		text := string(raw)
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
		}
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
	return steps, nil
}

// readLine returns the next line without its \n or \r\n; io.EOF when there
// is none; ErrLineTooLong, without reading the rest, for a line over
// MaxLineLen bytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		buf = append(buf, frag...)
		if len(bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r"))) > MaxLineLen {
			return nil, ErrLineTooLong
		}
		switch {
		case err == nil:
			buf = bytes.TrimSuffix(buf, []byte("\n"))
			return bytes.TrimSuffix(buf, []byte("\r")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0:
			return bytes.TrimSuffix(buf, []byte("\r")), nil
		default:
			return nil, err
		}
	}
}

// checkNode rejects a node name that would print ambiguously or not at all.
func checkNode(n NodeID) error {
	switch {
	case strings.ContainsAny(string(n), "(),:{}"):
		return fmt.Errorf("%w %q: must not contain ( ) , : { }", ErrBadNode, n)
	case !utf8.ValidString(string(n)):
		return fmt.Errorf("%w %q: not valid UTF-8", ErrBadNode, n)
	case strings.ContainsRune(string(n), '\ufeff'):
		return fmt.Errorf("%w %q: contains a byte order mark", ErrBadNode, n)
	case strings.IndexFunc(string(n), unicode.IsControl) >= 0:
		return fmt.Errorf("%w %q: contains a control character (such as NUL)", ErrBadNode, n)
	}
	return nil
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
		if err := checkNode(n); err != nil {
			return Step{}, err
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
