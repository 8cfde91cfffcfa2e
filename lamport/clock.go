package lamport

import (
	"fmt"
	"sync/atomic"
)

// Time is a Lamport counter value.
type Time uint64

// NodeID names a process (a node) in a Lamport or vector clock.
type NodeID string

// Clock is a Lamport clock. The zero value is ready to use, starts at 0, and
// the first event gets 1. A Clock is safe for concurrent use: it is one
// atomic counter, as in serf's LamportClock.
type Clock struct {
	counter atomic.Uint64
}

// Time returns the current counter without advancing it.
func (c *Clock) Time() Time { return Time(c.counter.Load()) }

// Tick advances the clock for a local event (rule 1) and returns the event's
// counter.
func (c *Clock) Tick() Time { return Time(c.counter.Add(1)) }

// Send advances the clock for a send event (rule 2: a send is an event) and
// returns the counter to attach to the message.
func (c *Clock) Send() Time { return c.Tick() }

// Receive applies rule 3 for a message carrying t: the clock becomes
// max(local, t) + 1, and that value, the counter of the receive event, is
// returned.
func (c *Clock) Receive(t Time) Time {
	for {
		cur := c.counter.Load()
		next := max(cur, uint64(t)) + 1
		if c.counter.CompareAndSwap(cur, next) {
			return Time(next)
		}
	}
}

// Timestamp is a Lamport timestamp made unique by the node that issued it.
// Timestamps are totally ordered: by Counter, then by Node.
type Timestamp struct {
	Counter Time   `json:"counter"`
	Node    NodeID `json:"node"`
}

// Compare returns -1 if t orders before u, +1 if after, 0 if they are equal.
func (t Timestamp) Compare(u Timestamp) int {
	switch {
	case t.Counter < u.Counter:
		return -1
	case t.Counter > u.Counter:
		return 1
	case t.Node < u.Node:
		return -1
	case t.Node > u.Node:
		return 1
	}
	return 0
}

// Less reports whether t orders before u in the total order.
func (t Timestamp) Less(u Timestamp) bool { return t.Compare(u) < 0 }

// String formats t as (counter,node), e.g. (3,B).
func (t Timestamp) String() string { return fmt.Sprintf("(%d,%s)", t.Counter, t.Node) }
