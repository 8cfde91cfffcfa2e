package cluster

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"time"
)

// FaultKind names a fault of a schedule.
type FaultKind string

const (
	FaultPartition FaultKind = "partition" // Groups
	FaultIsolate   FaultKind = "isolate"   // Nodes[0]
	FaultCut       FaultKind = "cut"       // Nodes[0] → Nodes[1]
	FaultHeal      FaultKind = "heal"
	FaultCrash     FaultKind = "crash"   // Nodes[0]
	FaultRestart   FaultKind = "restart" // Nodes[0]
	FaultPause     FaultKind = "pause"   // Nodes[0] for For
)

// Fault is one step of a fault schedule, At after the schedule starts.
type Fault struct {
	At     time.Duration `json:"at_ns"`
	Kind   FaultKind     `json:"kind"`
	Nodes  []NodeID      `json:"nodes,omitempty"`
	Groups [][]NodeID    `json:"groups,omitempty"`
	For    time.Duration `json:"for_ns,omitempty"`
}

func (f Fault) String() string {
	switch f.Kind {
	case FaultPartition:
		return fmt.Sprintf("%s partition %s", f.At, FormatGroups(f.Groups))
	case FaultHeal:
		return fmt.Sprintf("%s heal", f.At)
	case FaultPause:
		return fmt.Sprintf("%s pause %d for %s", f.At, f.Nodes[0], f.For)
	case FaultCut:
		return fmt.Sprintf("%s cut %d→%d", f.At, f.Nodes[0], f.Nodes[1])
	}
	ids := make([]string, len(f.Nodes))
	for i, id := range f.Nodes {
		ids[i] = id.String()
	}
	return fmt.Sprintf("%s %s %s", f.At, f.Kind, strings.Join(ids, ","))
}

// ScheduleOptions shape a generated fault schedule.
type ScheduleOptions struct {
	Nodes    int
	Duration time.Duration // faults start within it
	Faults   int           // how many faults (each followed by its repair)
	// Kinds to draw from; empty: partition, isolate, crash, pause.
	Kinds []FaultKind
	// Hold is how long each fault lasts before its repair (heal, restart;
	// a pause ends by itself). Zero: Duration / (2*Faults).
	Hold time.Duration
}

// GenerateSchedule draws a fault schedule from seed: the same seed and
// options give the same schedule. Faults do not overlap: each is repaired
// before the next begins, and the schedule ends healed with every node up.
func GenerateSchedule(seed int64, o ScheduleOptions) []Fault {
	rng := rand.New(rand.NewSource(seed))
	kinds := o.Kinds
	if len(kinds) == 0 {
		kinds = []FaultKind{FaultPartition, FaultIsolate, FaultCrash, FaultPause}
	}
	if o.Faults < 1 || o.Nodes < 2 {
		return nil
	}
	slot := o.Duration / time.Duration(o.Faults)
	hold := o.Hold
	if hold <= 0 {
		hold = slot / 2
	}
	var out []Fault
	for i := 0; i < o.Faults; i++ {
		at := time.Duration(i)*slot + time.Duration(rng.Int63n(int64(slot-hold)+1))
		node := NodeID(1 + rng.Intn(o.Nodes))
		switch k := kinds[rng.Intn(len(kinds))]; k {
		case FaultPartition:
			perm := rng.Perm(o.Nodes)
			cut := 1 + rng.Intn(o.Nodes-1)
			var a, b []NodeID
			for j, p := range perm {
				if j < cut {
					a = append(a, NodeID(p+1))
				} else {
					b = append(b, NodeID(p+1))
				}
			}
			sort.Slice(a, func(i, j int) bool { return a[i] < a[j] })
			sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
			out = append(out, Fault{At: at, Kind: k, Groups: [][]NodeID{a, b}}, Fault{At: at + hold, Kind: FaultHeal})
		case FaultIsolate:
			out = append(out, Fault{At: at, Kind: k, Nodes: []NodeID{node}}, Fault{At: at + hold, Kind: FaultHeal})
		case FaultCut:
			other := NodeID(1 + (int(node)+rng.Intn(o.Nodes-1))%o.Nodes)
			out = append(out, Fault{At: at, Kind: k, Nodes: []NodeID{node, other}}, Fault{At: at + hold, Kind: FaultHeal})
		case FaultCrash:
			out = append(out, Fault{At: at, Kind: k, Nodes: []NodeID{node}}, Fault{At: at + hold, Kind: FaultRestart, Nodes: []NodeID{node}})
		case FaultPause:
			out = append(out, Fault{At: at, Kind: k, Nodes: []NodeID{node}, For: hold})
		}
	}
	return out
}

// Apply applies one fault now.
func (c *Cluster) Apply(f Fault) error {
	switch f.Kind {
	case FaultPartition:
		return c.Partition(f.Groups...)
	case FaultHeal:
		c.Heal()
		return nil
	}
	if len(f.Nodes) == 0 {
		return fmt.Errorf("%w: fault %s names no node", ErrInvalidConfig, f.Kind)
	}
	switch f.Kind {
	case FaultIsolate:
		return c.Isolate(f.Nodes[0])
	case FaultCut:
		if len(f.Nodes) < 2 {
			return fmt.Errorf("%w: cut needs two nodes", ErrInvalidConfig)
		}
		return c.Cut(f.Nodes[0], f.Nodes[1])
	case FaultCrash:
		return c.Crash(f.Nodes[0])
	case FaultRestart:
		return c.Restart(f.Nodes[0])
	case FaultPause:
		return c.Pause(f.Nodes[0], f.For)
	}
	return fmt.Errorf("%w: unknown fault %q", ErrInvalidConfig, f.Kind)
}

// RunSchedule applies faults at their times (on the cluster's clock) from
// now, returning when the last is applied or ctx ends. Errors of single
// faults (restarting a node that is up, say) are collected, not fatal.
func (c *Cluster) RunSchedule(ctx context.Context, faults []Fault) []error {
	start := c.clock.Now()
	var errs []error
	for _, f := range faults {
		if wait := f.At - c.clock.Now().Sub(start); wait > 0 {
			select {
			case <-ctx.Done():
				return append(errs, ctx.Err())
			case <-c.done:
				return append(errs, ErrClosed)
			case <-c.clock.After(wait):
			}
		}
		if err := c.Apply(f); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
		}
	}
	return errs
}
