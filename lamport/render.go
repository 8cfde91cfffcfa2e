package lamport

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// View is a Trace with its events named by timestamp ("(3,B)"): the form
// `coordctl lamport trace -w json` prints, {"events","order","concurrent",
// "in_flight"}. Its slices are never nil.
type View struct {
	Events     []ViewEvent `json:"events"`
	Order      []string    `json:"order"`
	Concurrent []ViewPair  `json:"concurrent"`
	InFlight   []string    `json:"in_flight"`
}

// ViewEvent is one event of a View.
type ViewEvent struct {
	Line     int    `json:"line"`
	Event    string `json:"event"`
	Node     NodeID `json:"node"`
	Op       Op     `json:"op"`
	Peer     NodeID `json:"peer,omitempty"`
	Lamport  string `json:"lamport"`
	Counter  Time   `json:"counter"`
	Vector   Vector `json:"vector"`
	Received *Time  `json:"received,omitempty"` // recv only
}

// ViewPair is a concurrent pair that Lamport order ranks First first.
type ViewPair struct {
	First  string `json:"first"`
	Second string `json:"second"`
}

// View returns t as a View.
func (t *Trace) View() View {
	v := View{Events: []ViewEvent{}, Order: []string{}, Concurrent: []ViewPair{}, InFlight: []string{}}
	for _, e := range t.Events {
		j := ViewEvent{
			Line: e.Line, Event: e.Step.String(), Node: e.Node, Op: e.Op, Peer: e.Peer,
			Lamport: e.Timestamp.String(), Counter: e.Timestamp.Counter, Vector: e.Vector,
		}
		if e.Op == OpRecv {
			rcv := e.Received
			j.Received = &rcv
		}
		v.Events = append(v.Events, j)
	}
	for _, i := range t.Order {
		v.Order = append(v.Order, t.Events[i].Timestamp.String())
	}
	for _, p := range t.Concurrent {
		v.Concurrent = append(v.Concurrent, ViewPair{First: t.Events[p.First].Timestamp.String(), Second: t.Events[p.Second].Timestamp.String()})
	}
	for _, i := range t.InFlight {
		v.InFlight = append(v.InFlight, t.Events[i].Timestamp.String())
	}
	return v
}

// WriteText writes t for a reader: each event with its timestamp, vector
// clock and the rule applied, the total (Lamport) order, every concurrent
// pair that order ranks anyway, and the messages never received.
func (t *Trace) WriteText(w io.Writer) error {
	var b strings.Builder
	b.WriteString("Events, in script order:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  LINE\tEVENT\tLAMPORT\tVECTOR\tRULE")
	for _, e := range t.Events {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", e.Line, e.Step, e.Timestamp, e.Vector, e.Rule())
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	b.WriteString("\nTotal order (Lamport: by counter, then node):\n  ")
	if len(t.Order) == 0 {
		b.WriteString("(no events)")
	}
	for k, i := range t.Order {
		if k > 0 {
			b.WriteString(" < ")
		}
		b.WriteString(t.Events[i].Timestamp.String())
	}
	b.WriteString("\n")

	b.WriteString("\nConcurrent pairs (neither happened before the other, by vector clock;\nLamport order ranks the first one first anyway):\n")
	if len(t.Concurrent) == 0 {
		b.WriteString("  none: every pair of events is causally ordered, and Lamport order is that order\n")
	} else {
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, p := range t.Concurrent {
			x, y := t.Events[p.First], t.Events[p.Second]
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
	if len(t.InFlight) > 0 {
		b.WriteString("\nMessages never received:\n")
		for _, i := range t.InFlight {
			e := t.Events[i]
			fmt.Fprintf(&b, "  %s sent by %s to %s (line %d)\n", e.Timestamp, e.Node, e.Peer, e.Line)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Rule says how the event's counter was computed: "local: 1+1", "send:
// 1+1, message carries 2", "receive: max(1,2)+1".
func (e Event) Rule() string {
	switch e.Op {
	case OpSend:
		return fmt.Sprintf("send: %d+1, message carries %d", e.Prior, e.Timestamp.Counter)
	case OpRecv:
		return fmt.Sprintf("receive: max(%d,%d)+1", e.Prior, e.Received)
	}
	return fmt.Sprintf("local: %d+1", e.Prior)
}

// Report is a trace as `coordctl lamport trace` prints it: as JSON its
// View; as text WriteText, framed for the textbook example (Example set)
// by the theory's reading of it.
type Report struct {
	Trace   *Trace
	Example bool
}

// MarshalJSON writes the trace's View.
func (r Report) MarshalJSON() ([]byte, error) { return json.Marshal(r.Trace.View()) }

// WriteText writes the trace, with the example's introduction and
// conclusion when Example is set.
func (r Report) WriteText(w io.Writer) error {
	if r.Example {
		if _, err := io.WriteString(w, exampleIntro); err != nil {
			return err
		}
	}
	if err := r.Trace.WriteText(w); err != nil || !r.Example {
		return err
	}
	_, err := io.WriteString(w, exampleOutro)
	return err
}
