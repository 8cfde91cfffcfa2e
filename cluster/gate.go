package cluster

import (
	"sync"
	"sync/atomic"
)

// gate blocks whoever waits on it while it is closed: the pause of a node.
type gate struct {
	ch atomic.Pointer[chan struct{}] // nil while open
}

// wait returns true once the gate is open, false if stop closes first.
func (g *gate) wait(stop <-chan struct{}) bool {
	p := g.ch.Load()
	if p == nil {
		return true
	}
	select {
	case <-*p:
		return true
	case <-stop:
		return false
	}
}

func (g *gate) isOpen() bool { return g.ch.Load() == nil }

func (g *gate) shut() {
	ch := make(chan struct{})
	g.ch.CompareAndSwap(nil, &ch)
}

func (g *gate) open() {
	if p := g.ch.Swap(nil); p != nil {
		close(*p)
	}
}

// requestGate holds the client requests a paused node has received. On
// resume they run first, in arrival order, before Raft's own goroutines
// continue: a process that wakes from a pause serves what is in its socket
// buffers on the belief it had when it stopped. That is the hazard of
// lease reads the lab demonstrates.
type requestGate struct {
	hold   atomic.Bool // mirrors paused, read without the lock on the hot path
	mu     sync.Mutex
	paused bool
	queue  []queued
}

type queued struct {
	fn   func()
	done chan struct{}
}

func (g *requestGate) pause() {
	g.mu.Lock()
	g.paused = true
	g.hold.Store(true)
	g.mu.Unlock()
}

// resume runs the queued requests in order, then lets new ones through.
func (g *requestGate) resume() {
	for {
		g.mu.Lock()
		q := g.queue
		g.queue = nil
		if len(q) == 0 {
			g.paused = false
			g.hold.Store(false)
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		for _, r := range q {
			r.fn()
			close(r.done)
		}
	}
}

// drop releases queued requests without running them (the node crashed).
func (g *requestGate) drop() {
	g.mu.Lock()
	q := g.queue
	g.queue = nil
	g.paused = false
	g.hold.Store(false)
	g.mu.Unlock()
	_ = q // waiters leave through their stop channel
}

// do runs fn now or, while paused, at resume. It returns false if stop
// (the node's) or cancel (the caller's) closes before fn ran.
func (g *requestGate) do(stop, cancel <-chan struct{}, fn func()) bool {
	if !g.hold.Load() {
		fn()
		return true
	}
	g.mu.Lock()
	if !g.paused {
		g.mu.Unlock()
		fn()
		return true
	}
	q := queued{fn: fn, done: make(chan struct{})}
	g.queue = append(g.queue, q)
	g.mu.Unlock()
	select {
	case <-q.done:
		return true
	case <-stop:
		return false
	case <-cancel:
		g.mu.Lock()
		for i := range g.queue {
			if g.queue[i].done == q.done {
				g.queue = append(g.queue[:i], g.queue[i+1:]...)
				g.mu.Unlock()
				return false
			}
		}
		g.mu.Unlock()
		<-q.done // already running
		return true
	}
}
