package cluster

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

var (
	_ raft.Transport      = (*simTransport)(nil)
	_ raft.WithClose      = (*simTransport)(nil)
	_ raft.WithPreVote    = (*simTransport)(nil)
	_ raft.AppendPipeline = (*simPipeline)(nil)
	_ raft.AppendFuture   = (*pipeFuture)(nil)
)

var (
	errTransportShutdown = errors.New("transport shut down")
	errRPCTimeout        = errors.New("rpc timed out")
)

func nodeAddr(id NodeID) raft.ServerAddress { return raft.ServerAddress("node" + id.String()) }

func addrNode(a raft.ServerAddress) (NodeID, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(string(a), "node"))
	return NodeID(n), err == nil
}

// endpoints maps each node to its current transport (nil while crashed).
type endpoints struct {
	t []atomic.Pointer[simTransport]
}

func (e *endpoints) get(id NodeID) *simTransport {
	if int(id) < 1 || int(id) >= len(e.t) {
		return nil
	}
	return e.t[id].Load()
}

// simTransport is a raft.Transport over the lab's simulated network. A
// request travels the link from→to, the receiver's Raft answers, and the
// answer travels the link to→from, each with that link's delay, loss and
// cuts. While the node is paused it neither sends nor receives: callers
// block on its gate, as they would on a stopped process's sockets.
type simTransport struct {
	id       NodeID
	nw       *network
	eps      *endpoints
	gate     *gate
	timeout  time.Duration
	noPipe   bool
	consumer chan raft.RPC
	stop     chan struct{}
	once     sync.Once

	hbMu sync.Mutex
	hbFn func(raft.RPC)

	mu        sync.Mutex
	pipelines []*simPipeline
}

func newSimTransport(id NodeID, nw *network, eps *endpoints, g *gate, timeout time.Duration) *simTransport {
	return &simTransport{
		id: id, nw: nw, eps: eps, gate: g, timeout: timeout,
		consumer: make(chan raft.RPC, 256),
		stop:     make(chan struct{}),
	}
}

func (t *simTransport) Consumer() <-chan raft.RPC     { return t.consumer }
func (t *simTransport) LocalAddr() raft.ServerAddress { return nodeAddr(t.id) }
func (t *simTransport) EncodePeer(_ raft.ServerID, a raft.ServerAddress) []byte {
	return []byte(a)
}
func (t *simTransport) DecodePeer(b []byte) raft.ServerAddress { return raft.ServerAddress(b) }

func (t *simTransport) SetHeartbeatHandler(cb func(raft.RPC)) {
	t.hbMu.Lock()
	t.hbFn = cb
	t.hbMu.Unlock()
}

// Close stops the transport: pending calls fail, pipelines close. Raft
// calls it from Shutdown.
func (t *simTransport) Close() error {
	t.once.Do(func() {
		close(t.stop)
		t.mu.Lock()
		ps := t.pipelines
		t.pipelines = nil
		t.mu.Unlock()
		for _, p := range ps {
			_ = p.Close()
		}
	})
	return nil
}

func isHeartbeat(cmd any) bool {
	req, ok := cmd.(*raft.AppendEntriesRequest)
	if !ok {
		return false
	}
	// The same test as raft's NetworkTransport.
	return req.Term != 0 && req.Addr != nil &&
		req.PrevLogEntry == 0 && req.PrevLogTerm == 0 &&
		len(req.Entries) == 0 && req.LeaderCommitIndex == 0
}

// deliverTo hands rpc to node to's Raft on arrival (dropping it if the
// node is down); it blocks while the receiver is paused.
func (t *simTransport) deliverTo(to NodeID, rpc raft.RPC) func() {
	return func() {
		peer := t.eps.get(to)
		if peer == nil || !peer.gate.wait(peer.stop) {
			return
		}
		if isHeartbeat(rpc.Command) {
			peer.hbMu.Lock()
			fn := peer.hbFn
			peer.hbMu.Unlock()
			if fn != nil {
				fn(rpc)
				return
			}
		}
		select {
		case peer.consumer <- rpc:
		case <-peer.stop:
		}
	}
}

// tryDeliverTo hands rpc over at once if that cannot block: the receiver
// runs, is not paused and has room in its queue (or takes heartbeats on
// its fast path).
func (t *simTransport) tryDeliverTo(to NodeID, rpc raft.RPC) func() bool {
	return func() bool {
		peer := t.eps.get(to)
		if peer == nil || !peer.gate.isOpen() {
			return false
		}
		if isHeartbeat(rpc.Command) {
			peer.hbMu.Lock()
			fn := peer.hbFn
			peer.hbMu.Unlock()
			if fn != nil {
				fn(rpc)
				return true
			}
		}
		select {
		case peer.consumer <- rpc:
			return true
		default:
			return false
		}
	}
}

// sendRPC sends rpc from this node to node to.
func (t *simTransport) sendRPC(to NodeID, rpc raft.RPC) {
	if t.nw.dropsEntries(t.id, to, rpc.Command) {
		return
	}
	t.nw.sendTry(t.id, to, t.deliverTo(to, rpc), t.tryDeliverTo(to, rpc))
}

// sendBack sends a response from node from back to this node; fn runs on arrival.
func (t *simTransport) sendBack(from NodeID, fn func()) {
	t.nw.sendTry(from, t.id, t.returnTo(fn), func() bool {
		if t.eps.get(t.id) != t || !t.gate.isOpen() {
			return false
		}
		fn()
		return true
	})
}

// returnTo delivers a response at this node, once it is not paused.
func (t *simTransport) returnTo(fn func()) func() {
	return func() {
		if t.eps.get(t.id) != t || !t.gate.wait(t.stop) {
			return
		}
		fn()
	}
}

func (t *simTransport) target(a raft.ServerAddress) (NodeID, error) {
	to, ok := addrNode(a)
	if !ok || !t.nw.valid(to) {
		return 0, fmt.Errorf("unknown peer %q", a)
	}
	if t.eps.get(to) == nil {
		return 0, fmt.Errorf("dial %s: connection refused (node down)", a)
	}
	return to, nil
}

// call sends one RPC and waits for its response over the return link.
func (t *simTransport) call(a raft.ServerAddress, cmd any, r io.Reader, timeout time.Duration) (any, error) {
	if !t.gate.wait(t.stop) {
		return nil, errTransportShutdown
	}
	to, err := t.target(a)
	if err != nil {
		return nil, err
	}
	respCh := make(chan raft.RPCResponse, 1)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	t.sendRPC(to, raft.RPC{Command: cmd, Reader: r, RespChan: respCh})
	var resp raft.RPCResponse
	select {
	case resp = <-respCh:
	case <-timer.C:
		return nil, errRPCTimeout
	case <-t.stop:
		return nil, errTransportShutdown
	}
	back := make(chan struct{})
	t.sendBack(to, func() { close(back) })
	select {
	case <-back:
	case <-timer.C:
		return nil, errRPCTimeout
	case <-t.stop:
		return nil, errTransportShutdown
	}
	return resp.Response, resp.Error
}

func (t *simTransport) AppendEntries(_ raft.ServerID, a raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	return roundTrip(t, a, args, nil, t.timeout, resp)
}

func (t *simTransport) RequestVote(_ raft.ServerID, a raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return roundTrip(t, a, args, nil, t.timeout, resp)
}

func (t *simTransport) RequestPreVote(_ raft.ServerID, a raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return roundTrip(t, a, args, nil, t.timeout, resp)
}

func (t *simTransport) InstallSnapshot(_ raft.ServerID, a raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	return roundTrip(t, a, args, data, 10*t.timeout, resp)
}

// roundTrip sends args to a and copies the answer into resp.
func roundTrip[R any](t *simTransport, a raft.ServerAddress, args any, data io.Reader, timeout time.Duration, resp *R) error {
	out, err := t.call(a, args, data, timeout)
	if err != nil {
		return err
	}
	*resp = *out.(*R)
	return nil
}

func (t *simTransport) TimeoutNow(_ raft.ServerID, a raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return roundTrip(t, a, args, nil, t.timeout, resp)
}

// AppendEntriesPipeline lets the leader keep several AppendEntries in
// flight on a link, as NetworkTransport does over one TCP connection.
func (t *simTransport) AppendEntriesPipeline(_ raft.ServerID, a raft.ServerAddress) (raft.AppendPipeline, error) {
	if t.noPipe {
		return nil, raft.ErrPipelineReplicationNotSupported
	}
	to, err := t.target(a)
	if err != nil {
		return nil, err
	}
	p := &simPipeline{
		t: t, to: to,
		inflight: make(chan *pipeFuture, 128),
		answered: make(chan *pipeFuture, 128),
		done:     make(chan raft.AppendFuture, 128),
		stop:     make(chan struct{}),
	}
	t.mu.Lock()
	select {
	case <-t.stop:
		t.mu.Unlock()
		return nil, errTransportShutdown
	default:
	}
	t.pipelines = append(t.pipelines, p)
	t.mu.Unlock()
	go p.answer()
	go p.decode()
	return p, nil
}

// simPipeline keeps AppendEntries in flight on one link. Two goroutines
// per pipeline: answer sends each response back over the return link as
// soon as the follower gives it (so responses overlap in flight, as on
// TCP); decode hands them to Raft in order once they arrive.
type simPipeline struct {
	t        *simTransport
	to       NodeID
	inflight chan *pipeFuture // sent, awaiting the follower's answer
	answered chan *pipeFuture // answer on its way back
	done     chan raft.AppendFuture
	stop     chan struct{}
	once     sync.Once
	decoding atomic.Int32 // futures handed to decode and not yet done
}

type pipeFuture struct {
	start   time.Time
	args    *raft.AppendEntriesRequest
	resp    *raft.AppendEntriesResponse
	respCh  chan raft.RPCResponse
	arrived chan raft.RPCResponse
	err     error
}

func (f *pipeFuture) complete(r raft.RPCResponse) {
	if r.Error != nil {
		f.err = r.Error
	} else {
		*f.resp = *r.Response.(*raft.AppendEntriesResponse)
	}
}

// Error is only called by Raft after the future came out of Consumer,
// which happens once it is complete.
func (f *pipeFuture) Error() error                          { return f.err }
func (f *pipeFuture) Start() time.Time                      { return f.start }
func (f *pipeFuture) Request() *raft.AppendEntriesRequest   { return f.args }
func (f *pipeFuture) Response() *raft.AppendEntriesResponse { return f.resp }
func (p *simPipeline) Consumer() <-chan raft.AppendFuture   { return p.done }

func (p *simPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	t := p.t
	if !t.gate.wait(p.stop) {
		return nil, raft.ErrPipelineShutdown
	}
	select {
	case <-p.stop:
		return nil, raft.ErrPipelineShutdown
	default:
	}
	f := &pipeFuture{start: time.Now(), args: args, resp: resp,
		respCh:  make(chan raft.RPCResponse, 1),
		arrived: make(chan raft.RPCResponse, 1)}
	t.sendRPC(p.to, raft.RPC{Command: args, RespChan: f.respCh})
	select {
	case p.inflight <- f:
		return f, nil
	case <-p.stop:
		return nil, raft.ErrPipelineShutdown
	}
}

func (p *simPipeline) answer() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var f *pipeFuture
		select {
		case f = <-p.inflight:
		case <-p.stop:
			return
		}
		timer.Reset(p.t.timeout)
		select {
		case r := <-f.respCh:
			p.t.sendBack(p.to, func() { f.arrived <- r })
		case <-timer.C:
			f.arrived <- raft.RPCResponse{Error: errRPCTimeout}
		case <-p.stop:
			return
		}
		stopTimer(timer)
		// Fast path: the answer is already back (a link without delay)
		// and nothing earlier awaits decoding, so order is kept without
		// handing over to decode.
		if p.decoding.Load() == 0 {
			select {
			case r := <-f.arrived:
				f.complete(r)
				select {
				case p.done <- f:
				case <-p.stop:
					return
				}
				continue
			default:
			}
		}
		p.decoding.Add(1)
		select {
		case p.answered <- f:
		case <-p.stop:
			return
		}
	}
}

func stopTimer(t *time.Timer) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
}

func (p *simPipeline) decode() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var f *pipeFuture
		select {
		case f = <-p.answered:
		case <-p.stop:
			return
		}
		timer.Reset(p.t.timeout)
		select {
		case r := <-f.arrived:
			f.complete(r)
		case <-timer.C:
			f.complete(raft.RPCResponse{Error: errRPCTimeout})
		case <-p.stop:
			return
		}
		stopTimer(timer)
		select {
		case p.done <- f:
		case <-p.stop:
			return
		}
		p.decoding.Add(-1)
	}
}

func (p *simPipeline) Close() error {
	p.once.Do(func() { close(p.stop) })
	// Raft's replication goroutine calls Close and then stops reading
	// done; the decoder and answer goroutines leave through stop.
	return nil
}
