package faultproxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Fault is one active fault, as a cluster's status reports it.
type Fault struct {
	// Kind is "isolated" or "client-blackholed" (of Member), "cut" or
	// "delay" (of the directed link From → To).
	Kind   string `json:"kind"`
	Member int    `json:"member,omitempty"`
	From   int    `json:"from,omitempty"`
	To     int    `json:"to,omitempty"`
	Ms     int    `json:"ms,omitempty"`
}

// link is a directed link between members, by index (1-based).
type link struct{ from, to int }

// Faults are the faults of the directed links between n members (indexes
// 1..n) and of each member's client link. A link is cut when it was cut
// explicitly or either end is isolated or down. Every change wakes the
// writers a cut stalled, so that they look again. Safe for concurrent use.
type Faults struct {
	mu       sync.RWMutex
	cut      map[link]bool
	delay    map[link]time.Duration
	isolated map[int]bool
	down     map[int]bool
	clients  map[int]bool // members whose client link is cut
	n        int
	changed  chan struct{}
}

// NewFaults returns the faults of n members, none active.
func NewFaults(n int) *Faults {
	return &Faults{cut: map[link]bool{}, delay: map[link]time.Duration{}, isolated: map[int]bool{},
		down: map[int]bool{}, clients: map[int]bool{}, n: n, changed: make(chan struct{})}
}

// update applies fn to the faults and wakes the stalled writers.
func (f *Faults) update(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
	close(f.changed)
	f.changed = make(chan struct{})
}

// SetDown marks member n down (true) or up: all its links are cut.
func (f *Faults) SetDown(n int, down bool) {
	f.update(func() {
		if down {
			f.down[n] = true
		} else {
			delete(f.down, n)
		}
	})
}

// SetIsolated cuts every peer link of member n until Heal.
func (f *Faults) SetIsolated(n int) { f.update(func() { f.isolated[n] = true }) }

// SetClientCut holds the traffic of member n's client link until Heal.
func (f *Faults) SetClientCut(n int) { f.update(func() { f.clients[n] = true }) }

// client returns the fault of the client link of member n.
func (f *Faults) client(n int) (cut bool, delay time.Duration, changed <-chan struct{}) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.clients[n], 0, f.changed
}

// ClientCuts returns the members whose client link is cut.
func (f *Faults) ClientCuts() map[int]bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return maps.Clone(f.clients)
}

// SetCut cuts the directed link from → to until Heal.
func (f *Faults) SetCut(from, to int) { f.update(func() { f.cut[link{from, to}] = true }) }

// SetDelay delays each write on the directed link from → to by d (0
// removes the delay).
func (f *Faults) SetDelay(from, to int, d time.Duration) {
	l := link{from, to}
	f.update(func() {
		if d == 0 {
			delete(f.delay, l)
		} else {
			f.delay[l] = d
		}
	})
}

// heal removes every fault but the members that are down.
func (f *Faults) Heal() {
	f.update(func() {
		clear(f.cut)
		clear(f.delay)
		clear(f.isolated)
		clear(f.clients)
	})
}

// Isolated returns the isolated members.
func (f *Faults) Isolated() map[int]bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return maps.Clone(f.isolated)
}

// get returns the fault of from → to and the channel closed at the next
// change. An index of 0 is a dialer the proxy could not identify (a
// connection that so far carried only health probes): then the link counts
// as cut when every link it might be is cut, and is delayed by the longest
// of their delays.
func (f *Faults) get(from, to int) (cut bool, delay time.Duration, changed <-chan struct{}) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if from != 0 && to != 0 {
		cut, delay = f.getLocked(from, to)
		return cut, delay, f.changed
	}
	cut = true
	for k := 1; k <= f.n; k++ {
		l := link{from, to}
		if from == 0 {
			l.from = k
		} else {
			l.to = k
		}
		if l.from == l.to {
			continue
		}
		c, d := f.getLocked(l.from, l.to)
		cut = cut && c
		delay = max(delay, d)
	}
	return cut, delay, f.changed
}

func (f *Faults) getLocked(from, to int) (bool, time.Duration) {
	l := link{from, to}
	return f.cut[l] || f.isolated[from] || f.isolated[to] || f.down[from] || f.down[to], f.delay[l]
}

// Links lists the cut and delayed links, in order.
func (f *Faults) Links() []Fault {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []Fault
	for from := 1; from <= f.n; from++ {
		for to := 1; to <= f.n; to++ {
			l := link{from, to}
			if f.cut[l] {
				out = append(out, Fault{Kind: "cut", From: from, To: to})
			}
			if d := f.delay[l]; d > 0 {
				out = append(out, Fault{Kind: "delay", From: from, To: to, Ms: int(d / time.Millisecond)})
			}
		}
	}
	return out
}

// Proxy is a TCP proxy in front of one member's listener that tracks
// its connections, so that closing it resets them all as a dead process's
// would, and never leaves a connection it could not forward hanging.
//
// In front of the peer listener (ids set) it knows who dialed each
// connection: etcd's peers name themselves in the X-Server-From header of
// their stream, pipeline and snapshot requests. So faults apply per
// directed link: on a connection dialed by d to this member t, request
// bytes travel d → t and response bytes t → d (a stream response carries
// t's raft messages to d). In front of the client listener (ids nil) both
// directions follow the member's client-link fault.
type Proxy struct {
	ln     net.Listener
	target string // host:port of the member's own peer listener
	to     int    // index of the member
	ids    Senders
	faults *Faults

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Senders names the member that dialed a peer connection: the index of
// the member whose ID X-Server-From spells, 0 when unknown. A cluster
// whose membership changes (a member replaced) updates its answers while
// proxies ask, so implementations are safe for concurrent use.
type Senders interface {
	Sender(id string) int
}

// SenderMap is a fixed Senders: member IDs to indexes.
type SenderMap map[string]int

// Sender implements Senders.
func (m SenderMap) Sender(id string) int { return m[id] }

// Start listens on addr (host:port; port 0 picks one) and forwards to
// target, the listener of member `to` (an index of faults). ids names the
// member that dialed by the ID in X-Server-From; nil makes a client proxy.
// It returns the listen error, if any.
func Start(addr, target string, to int, ids Senders, faults *Faults) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, to: to, ids: ids, faults: faults, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(in) {
			_ = in.Close()
			return
		}
		p.wg.Add(1)
		go p.serve(in)
	}
}

// serve forwards one connection. A connection it cannot forward (the
// member is not listening) is closed at once, never left hanging.
func (p *Proxy) serve(in net.Conn) {
	defer p.wg.Done()
	defer p.untrack(in)
	out, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		return
	}
	if !p.track(out) {
		_ = out.Close()
		return
	}
	defer p.untrack(out)

	var from atomic.Int64 // the dialer, once a request named it
	ended := make(chan struct{})
	done := make(chan struct{}, 2)
	rxFault := func() (bool, time.Duration, <-chan struct{}) { return p.faults.get(p.to, int(from.Load())) }
	txFault := func() (bool, time.Duration, <-chan struct{}) { return p.faults.get(int(from.Load()), p.to) }
	if p.ids == nil {
		rxFault = func() (bool, time.Duration, <-chan struct{}) { return p.faults.client(p.to) }
		txFault = rxFault
	}
	go func() {
		defer func() { done <- struct{}{} }()
		_, _ = io.Copy(&faultWriter{w: in, fault: rxFault, ended: ended}, out)
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		tx := &faultWriter{w: out, fault: txFault, ended: ended}
		if p.ids == nil {
			_, _ = io.Copy(tx, in)
			return
		}
		br := bufio.NewReader(in)
		// Read requests until one names its sender; from then on the
		// bytes are copied as they come.
		for from.Load() == 0 {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if idx := p.ids.Sender(req.Header.Get("X-Server-From")); idx != 0 {
				from.Store(int64(idx))
			}
			if err := req.Write(tx); err != nil {
				return
			}
		}
		_, _ = io.Copy(tx, br)
	}()
	<-done
	// One direction ended: end the other too, stalled or not.
	close(ended)
	_ = in.Close()
	_ = out.Close()
	<-done
}

// Addr returns the address the proxy listens on.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting and closes every connection, like a process whose
// sockets the kernel resets; it waits for the forwarding goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

// faultWriter applies the fault of its link to every write. A cut link
// stalls the write until the link heals (or the connection ends): bytes are
// held, not dropped, as TCP holds them through a partition. Dropping them
// would be worse than unrealistic: etcd's stream encodings are stateful
// (msgappv2 derives each entry's index from the previous message), so a
// stream with a gap hands raft corrupt messages. A delayed link holds each
// write for the delay.
type faultWriter struct {
	w     io.Writer
	fault func() (cut bool, delay time.Duration, changed <-chan struct{})
	ended <-chan struct{}
}

var (
	errShortWrite = errors.New("faultproxy: short write")
	errEnded      = errors.New("faultproxy: connection ended")
)

func (f *faultWriter) Write(b []byte) (int, error) {
	for {
		cut, delay, changed := f.fault()
		if !cut {
			if delay > 0 {
				t := time.NewTimer(delay)
				select {
				case <-t.C:
				case <-f.ended:
					t.Stop()
					return 0, errEnded
				}
			}
			break
		}
		select {
		case <-changed:
		case <-f.ended:
			return 0, errEnded
		}
	}
	n, err := f.w.Write(b)
	if err == nil && n != len(b) {
		err = errShortWrite
	}
	return n, err
}

// Pausable is a TCP proxy whose traffic can be held in both
// directions, for tests that freeze one client: pausing it stops the
// client's requests and keepalives without touching anyone else's.
// Closing it resets its connections; a connection it cannot forward is
// closed at once.
type Pausable struct {
	p      *Proxy
	faults *Faults
}

// NewPausable listens on addr (host:port; port 0 picks one) and
// forwards to target (host:port).
func NewPausable(addr, target string) (*Pausable, error) {
	f := NewFaults(1)
	p, err := Start(addr, target, 1, nil, f)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: proxy on %s: %w", addr, err)
	}
	return &Pausable{p: p, faults: f}, nil
}

// URL returns http://host:port of the proxy.
func (p *Pausable) URL() string { return "http://" + p.p.Addr() }

// Pause holds all traffic (true) or lets it flow again, held bytes first (false).
func (p *Pausable) Pause(on bool) {
	if on {
		p.faults.SetClientCut(1)
	} else {
		p.faults.Heal()
	}
}

// Close closes the proxy and its connections.
func (p *Pausable) Close() { p.p.Close() }
