package cluster

import (
	"fmt"
	"math/rand"
	"sync"
	"time"
)

// LinkConfig is the state of one directed link.
type LinkConfig struct {
	// Delay is the one-way delay of every message.
	Delay time.Duration `json:"delay_ns"`
	// Jitter adds a uniform random amount in [-Jitter, +Jitter] to Delay
	// (never below zero). Order on a link is kept, as TCP would.
	Jitter time.Duration `json:"jitter_ns"`
	// Loss is the probability, 0 to 1, that a message is dropped.
	Loss float64 `json:"loss"`
	// Cut drops every message, including those in flight.
	Cut bool `json:"cut"`
}

func (l LinkConfig) validate() error {
	if l.Delay < 0 || l.Jitter < 0 {
		return fmt.Errorf("negative delay or jitter")
	}
	if l.Loss < 0 || l.Loss > 1 {
		return fmt.Errorf("loss %v not in [0,1]", l.Loss)
	}
	return nil
}

// down reports whether nothing gets through.
func (l LinkConfig) down() bool { return l.Cut || l.Loss >= 1 }

// LinkStats counts what happened on one directed link.
type LinkStats struct {
	Sent      int64 `json:"sent"`
	Delivered int64 `json:"delivered"`
	Dropped   int64 `json:"dropped"`
}

type envelope struct {
	at      time.Time
	deliver func()
}

type link struct {
	cfg     LinkConfig
	pending int // queued or being delivered by the link's goroutine
	q       chan envelope
	last    time.Time // delivery time of the last message queued: keeps FIFO under jitter
	stats   LinkStats
}

// network carries messages between nodes over directed links, each with its
// own delay, jitter, loss and cut. One goroutine per link delivers in order,
// so a slow link never holds up another. Delays are real time.
type network struct {
	n     int
	mu    sync.Mutex
	links [][]*link // [from][to], 1-based
	rng   *rand.Rand
	// lagging[id]: AppendEntries carrying entries to id are dropped
	// (SetLagging). Nil until first set.
	lagging []bool
	done    chan struct{}
	wg      sync.WaitGroup
}

func newNetwork(n int, cfg LinkConfig, seed int64) *network {
	nw := &network{n: n, rng: rand.New(rand.NewSource(seed)), done: make(chan struct{})}
	nw.links = make([][]*link, n+1)
	for i := 1; i <= n; i++ {
		nw.links[i] = make([]*link, n+1)
		for j := 1; j <= n; j++ {
			if i == j {
				continue
			}
			l := &link{cfg: cfg, q: make(chan envelope, 4096)}
			nw.links[i][j] = l
			nw.wg.Add(1)
			go nw.run(NodeID(i), NodeID(j), l)
		}
	}
	return nw
}

func (nw *network) close() {
	close(nw.done)
	nw.wg.Wait()
}

// send queues deliver to run on arrival at to. It reports false if the
// message was dropped at once (cut or lost); a message can also be dropped
// in flight when its link is cut before it arrives. deliver runs on the
// link's goroutine and must not block for long unless the receiver is
// paused (which holds up that link only, as a full TCP window would).
func (nw *network) send(from, to NodeID, deliver func()) bool {
	return nw.sendTry(from, to, deliver, nil)
}

// sendTry is send with a fast path: on a link without delay and with
// nothing queued, try runs in the sender's goroutine; if it reports that
// it delivered without blocking, the message skips the link's goroutine.
// Otherwise (or if try is nil) deliver is queued as usual.
func (nw *network) sendTry(from, to NodeID, deliver func(), try func() bool) bool {
	if from == to {
		go deliver()
		return true
	}
	nw.mu.Lock()
	l := nw.links[from][to]
	l.stats.Sent++
	if l.cfg.Cut || (l.cfg.Loss > 0 && nw.rng.Float64() < l.cfg.Loss) {
		l.stats.Dropped++
		nw.mu.Unlock()
		return false
	}
	if try != nil && l.pending == 0 && l.cfg.Delay == 0 && l.cfg.Jitter == 0 {
		l.pending++ // keeps later messages behind this one
		nw.mu.Unlock()
		ok := try()
		nw.mu.Lock()
		l.pending--
		if ok {
			l.stats.Delivered++
			nw.mu.Unlock()
			return true
		}
	}
	l.pending++
	now := time.Now()
	at := now
	if d := l.cfg.Delay; d > 0 || l.cfg.Jitter > 0 {
		if j := l.cfg.Jitter; j > 0 {
			d += time.Duration(nw.rng.Int63n(int64(2*j)+1)) - j
		}
		if d < 0 {
			d = 0
		}
		at = now.Add(d)
		if at.Before(l.last) {
			at = l.last
		}
		l.last = at
	}
	nw.mu.Unlock()
	select {
	case l.q <- envelope{at: at, deliver: deliver}:
		return true
	case <-nw.done:
		nw.mu.Lock()
		l.pending--
		nw.mu.Unlock()
		return false
	}
}

func (nw *network) run(from, to NodeID, l *link) {
	defer nw.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var e envelope
		select {
		case e = <-l.q:
		case <-nw.done:
			return
		}
		if wait := time.Until(e.at); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-nw.done:
				return
			}
		}
		nw.mu.Lock()
		cut := l.cfg.Cut
		if cut {
			l.stats.Dropped++
		} else {
			l.stats.Delivered++
		}
		nw.mu.Unlock()
		if !cut {
			e.deliver()
		}
		nw.mu.Lock()
		l.pending--
		nw.mu.Unlock()
	}
}

func (nw *network) valid(id NodeID) bool { return id >= 1 && int(id) <= nw.n }

func (nw *network) setLink(from, to NodeID, f func(*LinkConfig)) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	f(&nw.links[from][to].cfg)
}

func (nw *network) linkConfig(from, to NodeID) LinkConfig {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return nw.links[from][to].cfg
}

func (nw *network) linkStats(from, to NodeID) LinkStats {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return nw.links[from][to].stats
}

// connected reports whether messages get through both ways between a and b.
func (nw *network) connected(a, b NodeID) bool {
	if a == b {
		return true
	}
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return !nw.links[a][b].cfg.down() && !nw.links[b][a].cfg.down()
}

// healAll removes every cut, keeping delays, jitter and loss.
func (nw *network) healAll() {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for i := 1; i <= nw.n; i++ {
		for j := 1; j <= nw.n; j++ {
			if i != j {
				nw.links[i][j].cfg.Cut = false
			}
		}
	}
}

// LinkInfo is one directed link's state and counters.
type LinkInfo struct {
	From NodeID `json:"from"`
	To   NodeID `json:"to"`
	LinkConfig
	LinkStats
}
