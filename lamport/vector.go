package lamport

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// Ordering is how two vector clocks relate in the causal (partial) order.
type Ordering int

// The four possible outcomes of Vector.Compare.
const (
	Equal      Ordering = iota // same vector: the same causal past
	Before                     // v happened before w
	After                      // w happened before v
	Concurrent                 // neither: no causal path either way
)

func (o Ordering) String() string {
	switch o {
	case Equal:
		return "equal"
	case Before:
		return "before"
	case After:
		return "after"
	case Concurrent:
		return "concurrent"
	}
	return "Ordering(" + strconv.Itoa(int(o)) + ")"
}

// Vector is a vector clock: for each node, how many of its events are in the
// causal past (inclusive) of the event carrying the vector.
//
// A Vector is immutable: Increment and Merge return new vectors and never
// change the receiver or their argument, so Vectors can be copied, stored and
// shared freely. The zero value is the empty vector (all counters 0).
type Vector struct {
	m map[NodeID]Time // never mutated after construction; no zero entries
}

// NewVector returns a vector with the given counters. The map is copied;
// zero entries are dropped.
func NewVector(counters map[NodeID]Time) Vector {
	m := make(map[NodeID]Time, len(counters))
	for n, c := range counters {
		if c != 0 {
			m[n] = c
		}
	}
	return Vector{m: m}
}

// Get returns the counter of node n (0 if absent).
func (v Vector) Get(n NodeID) Time { return v.m[n] }

// Len returns the number of nodes with a non-zero counter.
func (v Vector) Len() int { return len(v.m) }

// Nodes returns the nodes with a non-zero counter, sorted.
func (v Vector) Nodes() []NodeID {
	ns := make([]NodeID, 0, len(v.m))
	for n := range v.m {
		ns = append(ns, n)
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i] < ns[j] })
	return ns
}

// Map returns a copy of the counters.
func (v Vector) Map() map[NodeID]Time {
	m := make(map[NodeID]Time, len(v.m))
	for n, c := range v.m {
		m[n] = c
	}
	return m
}

// Increment returns a copy of v with node n's counter one higher: the vector
// of n's next event.
func (v Vector) Increment(n NodeID) Vector {
	m := v.Map()
	m[n]++
	return Vector{m: m}
}

// Merge returns the element-wise maximum of v and w: the causal past of an
// event that has seen both. A receive event is v.Merge(msg).Increment(self).
func (v Vector) Merge(w Vector) Vector {
	m := v.Map()
	for n, c := range w.m {
		if c > m[n] {
			m[n] = c
		}
	}
	return Vector{m: m}
}

// Compare places v relative to w in the causal order: Before if every
// counter of v is ≤ w's and one is smaller, After for the converse, Equal if
// all match, Concurrent otherwise.
func (v Vector) Compare(w Vector) Ordering {
	less, greater := false, false
	for n, c := range v.m {
		switch d := w.m[n]; {
		case c < d:
			less = true
		case c > d:
			greater = true
		}
	}
	for n, d := range w.m {
		if _, ok := v.m[n]; !ok && d > 0 {
			less = true
		}
	}
	switch {
	case less && greater:
		return Concurrent
	case less:
		return Before
	case greater:
		return After
	}
	return Equal
}

// String formats v with nodes sorted, e.g. {A:2,B:1}; the empty vector is {}.
func (v Vector) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range v.Nodes() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(string(n))
		b.WriteByte(':')
		b.WriteString(strconv.FormatUint(uint64(v.m[n]), 10))
	}
	b.WriteByte('}')
	return b.String()
}

// MarshalJSON writes v as an object from node to counter, keys sorted.
func (v Vector) MarshalJSON() ([]byte, error) {
	if v.m == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(v.m)
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (v *Vector) UnmarshalJSON(b []byte) error {
	var m map[NodeID]Time
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*v = NewVector(m)
	return nil
}
