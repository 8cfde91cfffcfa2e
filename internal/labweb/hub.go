package labweb

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/cluster/labcmd"
)

// Event types of the stream (the SSE event names).
const (
	TypeState   = "state"   // State: everything the page shows now
	TypeStatus  = "status"  // Snapshot: the cluster's status and links
	TypeLoad    = "load"    // LoadEvent: the write load's figures
	TypeCommand = "command" // CommandEvent: a command run from any front end
)

// Link is one directed link's configuration, as the page draws it.
type Link struct {
	From     cluster.NodeID `json:"from"`
	To       cluster.NodeID `json:"to"`
	DelayMs  float64        `json:"delay_ms"`
	JitterMs float64        `json:"jitter_ms"`
	Loss     float64        `json:"loss"`
	Cut      bool           `json:"cut"`
}

// Snapshot is the cluster at one moment: cluster.Status (what the shell's
// status prints) and every directed link. AtNs is on the cluster's clock
// (nanoseconds since it started), as in the history and timeline.
type Snapshot struct {
	AtNs   int64          `json:"at_ns"`
	Status cluster.Status `json:"status"`
	Links  []Link         `json:"links"`
}

// LoadEvent is the write load's figures at AtNs.
type LoadEvent struct {
	AtNs int64 `json:"at_ns"`
	labcmd.LoadStats
}

// CommandEvent is one command line run by a front end: Source is "web",
// "shell" or "script"; Output is the shell's JSON result ({"cmd","ok",
// "error"?, …}); Ms is how long it ran.
type CommandEvent struct {
	// N numbers the commands of this run from 1; the page's command log
	// shows it, so the numbers stay right once old lines scroll away.
	N      uint64          `json:"n"`
	AtNs   int64           `json:"at_ns"`
	Source string          `json:"source"`
	Line   string          `json:"line"`
	Output json.RawMessage `json:"output"`
	Ms     float64         `json:"ms"`
}

// State is what GET /api/state returns and the stream's "state" event
// carries: Seq is the last event it includes.
type State struct {
	// Run identifies this run of the lab: a page that sees it change (the
	// lab restarted on the same address) starts over.
	Run         string           `json:"run"`
	Seq         uint64           `json:"seq"`
	Nodes       int              `json:"nodes"`
	BaseDelayMs float64          `json:"base_delay_ms"`
	Snapshot    *Snapshot        `json:"snapshot"`
	Load        labcmd.LoadStats `json:"load"`
	Commands    []CommandEvent   `json:"commands"` // the last few, oldest first
}

// keptCommands bounds State.Commands.
const keptCommands = 50

// Hub is the event stream: a bounded Ring of events and the State they
// add up to, shared by every reader. Safe for concurrent use.
type Hub struct {
	mu       sync.Mutex
	ring     *Ring
	state    State
	commands uint64        // commands published, numbering CommandEvent.N
	changed  chan struct{} // closed and replaced on every publish
}

// NewHub returns a hub keeping the last ringSize events.
func NewHub(ringSize int, base State) *Hub {
	base.Commands = []CommandEvent{}
	if base.Run == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		base.Run = hex.EncodeToString(b[:])
	}
	return &Hub{ring: NewRing(ringSize), state: base, changed: make(chan struct{})}
}

// publish adds one event (a *Snapshot, LoadEvent or CommandEvent) and
// folds it into the state. It returns the event's sequence number.
func (h *Hub) publish(typ string, v any) (uint64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := v.(CommandEvent); ok {
		h.commands++
		c.N = h.commands
		v = c
	}
	data, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case *Snapshot:
		h.state.Snapshot = x
	case LoadEvent:
		h.state.Load = x.LoadStats
	case CommandEvent:
		h.state.Commands = append(h.state.Commands, x)
		if n := len(h.state.Commands); n > keptCommands {
			h.state.Commands = append([]CommandEvent(nil), h.state.Commands[n-keptCommands:]...)
		}
	}
	e := h.ring.Add(typ, data)
	h.state.Seq = e.Seq
	close(h.changed)
	h.changed = make(chan struct{})
	return e.Seq, nil
}

// State returns the state now, as JSON, with the sequence number it
// includes.
func (h *Hub) State() ([]byte, uint64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, err := json.Marshal(h.state)
	return b, h.state.Seq, err
}

// Head is the newest event's sequence number.
func (h *Hub) Head() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ring.Head()
}

// read returns what a reader that has seen every event up to after needs
// next: the events after it, or, when the ring no longer holds them all
// (or the reader is new: fresh), a full state event standing for
// everything up to its Seq. wait is closed when there is more.
func (h *Hub) read(after uint64, fresh bool) (evs []Event, wait <-chan struct{}, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	wait = h.changed
	if after > h.ring.Head() {
		// A sequence this hub never reached: the reader saw another run
		// of the lab on the same address (a browser tab after a restart).
		// It gets the state, whose run id differs, to start over.
		fresh = true
	}
	if !fresh {
		var complete bool
		evs, complete = h.ring.Since(after)
		if complete {
			return evs, wait, nil
		}
	}
	b, err := json.Marshal(h.state)
	if err != nil {
		return nil, wait, err
	}
	return []Event{{Seq: h.state.Seq, Type: TypeState, Data: b}}, wait, nil
}
