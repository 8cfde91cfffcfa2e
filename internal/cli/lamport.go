package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/lamport"
)

func newLamportCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lamport",
		Short: "Lamport clocks and vector clocks, on a scripted history",
		Long: `Lamport clocks give every event a timestamp (counter,node) such that if a
happened before b, a's timestamp is smaller. Ordered by counter and then by
node, the timestamps form a total order that every node agrees on.

The converse does not hold: a smaller timestamp does not mean "happened
before". Vector clocks recover the causal (partial) order and show which
events are concurrent. And the total order is known only once timestamps
meet, after both nodes have acted, so it cannot decide "is this name free
now?". For that, see 'coordctl claim'.`,
		Example: `  coordctl lamport trace                 # the textbook example
  coordctl lamport trace history.txt
  printf 'A send B\nB recv A\n' | coordctl lamport trace - -w json`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newLamportTraceCmd(f))
	return cmd
}

type lamportTraceOptions struct {
	File string // "" runs lamport.ExampleScript; "-" reads stdin
}

func newLamportTraceCmd(f *factory) *cobra.Command {
	opts := &lamportTraceOptions{}
	cmd := &cobra.Command{
		Use:   "trace [FILE]",
		Short: "Apply Lamport and vector clocks to an event script",
		Long: `Read an event script, one event a line, and apply the clock rules:

  A local      a local event on A          Lamport: counter+1
  A send B     A sends a message to B      Lamport: counter+1, attached to the message
  B recv A     B receives the oldest       Lamport: max(counter, message)+1
               undelivered message from A

Blank lines and text after # are ignored. Every node's clock starts at 0.

Prints each event with its Lamport timestamp and vector clock, then the total
(Lamport) order, then every pair of events that are concurrent (neither
happened before the other, by vector clock) although the total order ranks
one first. With -w json: one object {"events","order","concurrent",
"in_flight"}.

Without FILE it runs the textbook example: A does two operations, (1,A) and
(2,A), the second sending A's counter 2 to B; B, whose counter is 1, takes
the maximum and adds one: (3,B). FILE "-" reads standard input.

A malformed line (unknown verb, wrong number of words, a message to self, a
receive with nothing in flight) is an error naming the line: exit 2.`,
		Example: `  coordctl lamport trace
  coordctl lamport trace history.txt
  printf 'A local\nA send B\nB local\nB recv A\n' | coordctl lamport trace -
  coordctl lamport trace -w json | jq '.concurrent'`,
		Args: argsUsage(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.File = args[0]
			}
			return runLamportTrace(f, opts)
		},
	}
	return cmd
}

// runLamportTrace reads the script, simulates it and prints the result.
func runLamportTrace(f *factory, opts *lamportTraceOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	var r io.Reader
	source := opts.File
	switch opts.File {
	case "":
		r, source = strings.NewReader(lamport.ExampleScript), "example"
	case "-":
		r, source = f.IO.In, "stdin"
	default:
		file, err := os.Open(opts.File)
		if err != nil {
			return err
		}
		defer file.Close()
		r = file
	}
	tr, err := lamport.ParseTrace(r)
	if err != nil {
		var le *lamport.LineError
		if errors.As(err, &le) {
			return usageErrorf("%s: %v", source, err)
		}
		return fmt.Errorf("%s: %w", source, err)
	}
	return p.Print(newLamportTraceResult(tr, opts.File == ""))
}

// lamportTraceResult is the output of 'lamport trace'; its JSON form is the
// stable contract.
type lamportTraceResult struct {
	Events     []lamportEventJSON `json:"events"`
	Order      []string           `json:"order"`
	Concurrent []lamportPairJSON  `json:"concurrent"`
	InFlight   []string           `json:"in_flight"`

	trace   *lamport.Trace
	example bool
}

type lamportEventJSON struct {
	Line     int            `json:"line"`
	Event    string         `json:"event"`
	Node     lamport.NodeID `json:"node"`
	Op       lamport.Op     `json:"op"`
	Peer     lamport.NodeID `json:"peer,omitempty"`
	Lamport  string         `json:"lamport"`
	Counter  lamport.Time   `json:"counter"`
	Vector   lamport.Vector `json:"vector"`
	Received *lamport.Time  `json:"received,omitempty"`
}

type lamportPairJSON struct {
	First  string `json:"first"`
	Second string `json:"second"`
}

func newLamportTraceResult(tr *lamport.Trace, example bool) lamportTraceResult {
	res := lamportTraceResult{
		Events:     []lamportEventJSON{},
		Order:      []string{},
		Concurrent: []lamportPairJSON{},
		InFlight:   []string{},
		trace:      tr,
		example:    example,
	}
	for _, e := range tr.Events {
		j := lamportEventJSON{
			Line: e.Line, Event: e.Step.String(), Node: e.Node, Op: e.Op, Peer: e.Peer,
			Lamport: e.Timestamp.String(), Counter: e.Timestamp.Counter, Vector: e.Vector,
		}
		if e.Op == lamport.OpRecv {
			rcv := e.Received
			j.Received = &rcv
		}
		res.Events = append(res.Events, j)
	}
	for _, i := range tr.Order {
		res.Order = append(res.Order, tr.Events[i].Timestamp.String())
	}
	for _, p := range tr.Concurrent {
		res.Concurrent = append(res.Concurrent, lamportPairJSON{
			First: tr.Events[p.First].Timestamp.String(), Second: tr.Events[p.Second].Timestamp.String(),
		})
	}
	for _, i := range tr.InFlight {
		res.InFlight = append(res.InFlight, tr.Events[i].Timestamp.String())
	}
	return res
}

const lamportExampleIntro = `The example from the theory: A does two operations, (1,A) and (2,A); the
second sends A's counter 2 to B. B has done one local operation, so its
counter is 1. On receipt B takes the maximum and adds one: max(1,2)+1 = 3,
and the receive is (3,B).

`

const lamportExampleOutro = `
In words: B's local operation (1,B) is concurrent with both of A's
operations. No message connects them, so neither could have influenced the
other, yet the total order puts (1,B) between (1,A) and (2,A). Lamport order
is consistent with causality but does not reveal it. And each node acted on
its own events without knowing the other's timestamps: the order among them
is known only where the timestamps meet, after the fact. That is why it
cannot decide "is this name free now?". See 'coordctl claim'.
`

// WriteSimple prints the events table, the total order and the concurrent pairs.
func (r lamportTraceResult) WriteSimple(w io.Writer) error {
	tr := r.trace
	var b strings.Builder
	if r.example {
		b.WriteString(lamportExampleIntro)
	}
	b.WriteString("Events, in script order:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  LINE\tEVENT\tLAMPORT\tVECTOR\tRULE")
	for _, e := range tr.Events {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", e.Line, e.Step, e.Timestamp, e.Vector, lamportRule(e))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	b.WriteString("\nTotal order (Lamport: by counter, then node):\n  ")
	if len(tr.Order) == 0 {
		b.WriteString("(no events)")
	}
	for k, i := range tr.Order {
		if k > 0 {
			b.WriteString(" < ")
		}
		b.WriteString(tr.Events[i].Timestamp.String())
	}
	b.WriteString("\n")

	b.WriteString("\nConcurrent pairs (neither happened before the other, by vector clock;\nLamport order ranks the first one first anyway):\n")
	if len(tr.Concurrent) == 0 {
		b.WriteString("  none: every pair of events is causally ordered, and Lamport order is that order\n")
	} else {
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, p := range tr.Concurrent {
			x, y := tr.Events[p.First], tr.Events[p.Second]
			why := "by counter"
			if x.Timestamp.Counter == y.Timestamp.Counter {
				why = "by node id only"
			}
			fmt.Fprintf(tw, "  %s || %s\t%s vs %s\tranked %s\n", x.Timestamp, y.Timestamp, x.Vector, y.Vector, why)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(tr.InFlight) > 0 {
		b.WriteString("\nMessages never received:\n")
		for _, i := range tr.InFlight {
			e := tr.Events[i]
			fmt.Fprintf(&b, "  %s sent by %s to %s (line %d)\n", e.Timestamp, e.Node, e.Peer, e.Line)
		}
	}
	if r.example {
		b.WriteString(lamportExampleOutro)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func lamportRule(e lamport.Event) string {
	switch e.Op {
	case lamport.OpSend:
		return fmt.Sprintf("send: %d+1, message carries %d", e.Prior, e.Timestamp.Counter)
	case lamport.OpRecv:
		return fmt.Sprintf("receive: max(%d,%d)+1", e.Prior, e.Received)
	}
	return fmt.Sprintf("local: %d+1", e.Prior)
}
