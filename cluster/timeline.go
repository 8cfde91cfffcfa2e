package cluster

import (
	"encoding/json"
	"io"
	"sort"
	"sync"
)

// EventKind classifies timeline events.
type EventKind string

const (
	// EventLeader: a node learned who leads (Leader 0: nobody it knows).
	EventLeader EventKind = "leader"
	// EventState: a node became follower, candidate, leader or shutdown.
	EventState EventKind = "state"
	// EventFault: a fault was applied (Detail says which).
	EventFault EventKind = "fault"
	// EventHeal: a fault was removed.
	EventHeal EventKind = "heal"
	// EventIndex: a sample of a node's commit and applied index.
	EventIndex EventKind = "index"
	// EventOp: a client operation returned (Outcome says how).
	EventOp EventKind = "op"
)

// Event is one entry of the timeline. AtNs is nanoseconds since the
// cluster started, on the same clock as the history's call and return
// times.
type Event struct {
	AtNs    int64     `json:"at_ns"`
	Kind    EventKind `json:"kind"`
	Node    NodeID    `json:"node,omitempty"`
	Leader  NodeID    `json:"leader,omitempty"`
	Term    uint64    `json:"term,omitempty"`
	State   string    `json:"state,omitempty"`
	Commit  uint64    `json:"commit,omitempty"`
	Applied uint64    `json:"applied,omitempty"`
	Op      string    `json:"op,omitempty"`
	Outcome Outcome   `json:"outcome,omitempty"`
	Detail  string    `json:"detail,omitempty"`
}

type timeline struct {
	now func() int64
	mu  sync.Mutex
	ev  []Event
	// maxIndex bounds the index samples kept (0: no bound); index counts
	// them, dropped counts those forgotten.
	maxIndex, index, dropped int
}

func (t *timeline) add(e Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.AtNs == 0 {
		e.AtNs = t.now()
	}
	t.ev = append(t.ev, e)
	if e.Kind != EventIndex {
		return
	}
	t.index++
	if t.maxIndex > 0 && t.index > t.maxIndex {
		t.thin()
	}
}

// thin forgets the older half of the index samples, keeping every other
// event; amortised over the samples added since, it costs O(1) each.
func (t *timeline) thin() {
	drop := t.index - t.maxIndex/2
	kept := t.ev[:0]
	for _, e := range t.ev {
		if e.Kind == EventIndex && drop > 0 {
			drop--
			t.index--
			t.dropped++
			continue
		}
		kept = append(kept, e)
	}
	clear(t.ev[len(kept):])
	t.ev = kept
}

func (t *timeline) events() []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Event(nil), t.ev...)
}

// Timeline returns the events so far in time order: leader and state
// changes, faults and heals, index samples, and one EventOp per client
// operation at its return time (from the history).
func (c *Cluster) Timeline() []Event {
	ev := c.timeline.events()
	for _, r := range c.History() {
		ev = append(ev, Event{AtNs: r.ReturnNs, Kind: EventOp, Node: r.Node, Op: string(r.Op) + " " + r.Key, Outcome: r.Outcome, Detail: r.Error})
	}
	sort.SliceStable(ev, func(i, j int) bool { return ev[i].AtNs < ev[j].AtNs })
	return ev
}

// WriteTimelineJSON writes the timeline as a JSON array.
func (c *Cluster) WriteTimelineJSON(w io.Writer) error {
	ev := c.Timeline()
	if ev == nil {
		ev = []Event{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(ev)
}
