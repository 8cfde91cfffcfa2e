package sidecar

import (
	"sync"

	"github.com/coordkit/coordkit/session"
)

// subscriberBuffer is how many unread views a watcher may fall behind by
// before the oldest are dropped; a watcher always receives the latest view.
const subscriberBuffer = 32

// Tracker holds the State of one sidecar, safe for concurrent use, and
// tells subscribers about every change visible in the leader view.
type Tracker struct {
	clock session.Clock

	mu    sync.Mutex
	state State
	subs  map[chan View]struct{}
}

// NewTracker returns a tracker for the election name, whose tokens fence
// scope, and this instance's id. A nil clock means the system clock.
func NewTracker(name, scope, id string, clock session.Clock) *Tracker {
	if clock == nil {
		clock = session.RealClock{}
	}
	state := NewState(name, id, clock.Now())
	state.Scope = scope
	return &Tracker{
		clock: clock,
		state: state,
		subs:  make(map[chan View]struct{}),
	}
}

// Apply applies ev (stamped with the tracker's clock when ev.At is zero),
// notifies watchers of a visible change and returns the new state and the
// change.
func (t *Tracker) Apply(ev Event) (State, Change) {
	if ev.At.IsZero() {
		ev.At = t.clock.Now()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	next, c := t.state.Apply(ev)
	t.state = next
	if c.Visible() {
		v := next.View()
		for ch := range t.subs {
			deliver(ch, v)
		}
	}
	return next, c
}

// deliver sends v without blocking: when ch is full its oldest view is
// dropped, so a slow watcher misses intermediate views but not the latest.
func deliver(ch chan View, v View) {
	for {
		select {
		case ch <- v:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}

// State returns the current state.
func (t *Tracker) State() State {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

// Subscribe returns a channel that first carries the current view and then
// every visible change, and a function that ends the subscription.
func (t *Tracker) Subscribe() (<-chan View, func()) {
	ch := make(chan View, subscriberBuffer)
	t.mu.Lock()
	ch <- t.state.View()
	t.subs[ch] = struct{}{}
	t.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			t.mu.Lock()
			delete(t.subs, ch)
			t.mu.Unlock()
		})
	}
}
