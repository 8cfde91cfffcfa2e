package scenarios

import (
	"fmt"
	"time"

	"github.com/coordkit/coordkit/lamport"
	"github.com/coordkit/coordkit/scenarios/report"
)

// traceTimeline draws a Lamport trace as a space-time diagram on a step
// axis: one lane per node, each event a mark on its node's lane, each
// message a bar from its send to its receive. note, if not nil, adds to an
// event's label.
func traceTimeline(tr *lamport.Trace, note func(e lamport.Event) string) *report.Timeline {
	step := func(i int) report.Millis { return report.Millis(time.Duration(i+1) * time.Millisecond) }
	tl := &report.Timeline{Unit: report.UnitStep, End: step(len(tr.Events))}
	seen := map[lamport.NodeID]bool{}
	for _, e := range tr.Events {
		if !seen[e.Node] {
			seen[e.Node] = true
			tl.Lanes = append(tl.Lanes, report.Lane{Name: string(e.Node), Spans: []report.Span{}})
		}
	}
	for _, e := range tr.Events {
		label := fmt.Sprintf("%s %s, vector %s", e.Timestamp, e.Step, e.Vector)
		if note != nil {
			if n := note(e); n != "" {
				label += ": " + n
			}
		}
		tl.Marks = append(tl.Marks, report.Mark{At: step(e.Index), Lane: string(e.Node), Label: label})
		if e.Op != lamport.OpSend {
			continue
		}
		op := report.Op{Client: fmt.Sprintf("%s→%s", e.Node, e.Peer), Call: step(e.Index)}
		if e.To >= 0 {
			r := tr.Events[e.To]
			op.Return, op.Outcome = step(e.To), report.OutcomeOK
			op.Desc = fmt.Sprintf("message sent at %s carrying %d, received as %s", e.Timestamp, e.Timestamp.Counter, r.Timestamp)
		} else {
			op.Return, op.Outcome = tl.End, report.OutcomeUnknown
			op.Desc = fmt.Sprintf("message sent at %s carrying %d, still in flight", e.Timestamp, e.Timestamp.Counter)
		}
		tl.Ops = append(tl.Ops, op)
	}
	return tl
}
