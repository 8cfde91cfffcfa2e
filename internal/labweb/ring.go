package labweb

// Event is one entry of the event stream: a sequence number (the SSE id),
// a type (the SSE event name) and its JSON data.
type Event struct {
	Seq  uint64
	Type string
	Data []byte
}

// Ring holds the last events, up to a fixed number. It is a pure value:
// no locking, no clock; the Hub serialises access. The zero Ring holds
// nothing and keeps nothing; use NewRing.
type Ring struct {
	buf  []Event
	head uint64 // sequence number of the newest event; 0: none yet
}

// NewRing returns a ring that keeps the last size events (at least one).
func NewRing(size int) *Ring {
	if size < 1 {
		size = 1
	}
	return &Ring{buf: make([]Event, size)}
}

// Add appends an event and returns it with its sequence number: one more
// than the previous event's, starting at 1.
func (r *Ring) Add(typ string, data []byte) Event {
	r.head++
	e := Event{Seq: r.head, Type: typ, Data: data}
	if len(r.buf) > 0 {
		r.buf[int((r.head-1)%uint64(len(r.buf)))] = e
	}
	return e
}

// Head is the sequence number of the newest event (0 before the first).
func (r *Ring) Head() uint64 { return r.head }

// Oldest is the sequence number of the oldest event the ring still holds
// (Head()+1 when it holds none).
func (r *Ring) Oldest() uint64 {
	n := uint64(len(r.buf))
	if r.head < n {
		return 1
	}
	return r.head - n + 1
}

// Since returns the events after seq, oldest first, and whether they are
// all of them: complete is false when some events after seq have already
// been overwritten (the caller must start again from a full state). A seq
// at or past Head gives none, complete.
func (r *Ring) Since(seq uint64) (events []Event, complete bool) {
	if seq >= r.head {
		return nil, true
	}
	first := seq + 1
	complete = true
	if old := r.Oldest(); first < old {
		first, complete = old, false
	}
	n := uint64(len(r.buf))
	for s := first; s <= r.head; s++ {
		events = append(events, r.buf[int((s-1)%n)])
	}
	return events, complete
}
