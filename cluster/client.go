package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// ReadMode is a rung of the read ladder, from cheapest and least safe to
// dearest and linearizable.
type ReadMode string

const (
	// ReadStale answers from the asked node's local state: a follower may
	// lag or be cut off.
	ReadStale ReadMode = "stale"
	// ReadLease has the leader answer from its local state, trusting that
	// it is still leader: wrong after a process pause or clock jump.
	ReadLease ReadMode = "lease"
	// ReadVerify has the leader confirm with a quorum that it still leads,
	// then answer from local state: a new leader may not yet have applied
	// what its predecessor committed.
	ReadVerify ReadMode = "verify"
	// ReadIndex is the ReadIndex of the Raft thesis: note the commit index
	// (once the leader has committed an entry of its own term), confirm
	// with a quorum that no later term exists, wait until that index is
	// applied, answer.
	ReadIndex ReadMode = "readindex"
	// ReadLog sends the read through the log like a write.
	ReadLog ReadMode = "log"
)

// ReadModes lists the ladder in order, cheapest first. It returns a fresh
// slice on every call, so a caller that sorts or trims it cannot change what
// ParseReadMode accepts.
func ReadModes() []ReadMode {
	return []ReadMode{ReadStale, ReadLease, ReadVerify, ReadIndex, ReadLog}
}

// ParseReadMode checks s.
func ParseReadMode(s string) (ReadMode, error) {
	for _, m := range ReadModes() {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w %q (want stale, lease, verify, readindex or log)", ErrBadMode, s)
}

// Op is one client operation.
type Op struct {
	Kind  OpKind
	Key   string
	Value string // put
	Old   string // cas
	New   string // cas
	Mode  ReadMode
	// Node, if set, is the node the request goes to (put --via, get
	// --node); it overrides the client's placement and is not changed on
	// retry.
	Node NodeID
}

// Result is what a client operation returned.
type Result struct {
	Op      Op            `json:"-"`
	Client  int           `json:"client"`
	Value   string        `json:"value"`
	Found   bool          `json:"found"`
	Swapped bool          `json:"swapped"`
	Entry   NodeID        `json:"entry"` // node the client sent it to
	Node    NodeID        `json:"node"`  // node that answered
	Hops    int           `json:"hops"`  // forwarding hops (0 or 1)
	Index   uint64        `json:"index"` // log index of a write or log read
	Tries   int           `json:"tries"`
	Outcome Outcome       `json:"outcome"`
	Err     error         `json:"-"`
	Latency time.Duration `json:"latency"`
	CallNs  int64         `json:"call_ns"`
	RetNs   int64         `json:"return_ns"`
}

// Client issues operations to the cluster as a real client would: it finds
// the leader, retries what certainly failed, and gives up within the op
// timeout. Each operation is recorded in the cluster's history. A Client
// is safe for concurrent use; give each logical client its own for a
// meaningful history.
type Client struct {
	c    *Cluster
	id   int
	near NodeID

	mu     sync.Mutex
	leader NodeID
	rng    *rand.Rand
}

// NewClient returns a client placed next to node near (0: not placed; it
// goes to whichever node it believes leads). A placed client sends every
// request to that node, and a follower forwards it to the leader, one hop
// over the simulated network; the client shares its node's side of any
// partition, so it does not fail over to other nodes.
func (c *Cluster) NewClient(near NodeID) *Client {
	id := int(c.clients.Add(1)) - 1
	c.rngMu.Lock()
	seed := c.rng.Int63()
	c.rngMu.Unlock()
	return &Client{c: c, id: id, near: near, rng: rand.New(rand.NewSource(seed))}
}

// ID is the client's number in the history.
func (cl *Client) ID() int { return cl.id }

// Put writes key=value.
func (cl *Client) Put(ctx context.Context, key, value string) (Result, error) {
	return cl.Do(ctx, Op{Kind: OpPut, Key: key, Value: value})
}

// Get reads key in mode.
func (cl *Client) Get(ctx context.Context, key string, mode ReadMode) (Result, error) {
	return cl.Do(ctx, Op{Kind: OpGet, Key: key, Mode: mode})
}

// CAS sets key to new if it is old.
func (cl *Client) CAS(ctx context.Context, key, old, new string) (Result, error) {
	return cl.Do(ctx, Op{Kind: OpCAS, Key: key, Old: old, New: new})
}

// Delete removes key.
func (cl *Client) Delete(ctx context.Context, key string) (Result, error) {
	return cl.Do(ctx, Op{Kind: OpDelete, Key: key})
}

// opError is one attempt's failure.
type opError struct {
	err     error
	unknown bool   // may have taken effect
	hint    NodeID // leader named by the node that refused
}

// reply is what a node answers.
type reply struct {
	index   uint64
	value   string
	found   bool
	swapped bool
	node    NodeID
	hops    int
}

// Do runs op until it succeeds, certainly fails past retrying, or the op
// timeout (or ctx) ends. The error is nil exactly when Outcome is ok.
func (cl *Client) Do(ctx context.Context, op Op) (Result, error) {
	c := cl.c
	if op.Kind == OpGet {
		if op.Mode == "" {
			op.Mode = ReadIndex
		}
		if _, err := ParseReadMode(string(op.Mode)); err != nil {
			return Result{Op: op, Outcome: OutcomeFail, Err: err}, err
		}
	}
	if op.Node != 0 {
		if err := c.check(op.Node); err != nil {
			return Result{Op: op, Outcome: OutcomeFail, Err: err}, err
		}
	}
	if c.closed.Load() {
		return Result{Op: op, Outcome: OutcomeFail, Err: ErrClosed}, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.OpTimeout)
	defer cancel()
	res := Result{Op: op, Client: cl.id, CallNs: c.nowNs()}
	start := time.Now()
	var last *opError
	for {
		entry := cl.entry(op)
		res.Entry = entry
		res.Tries++
		r, oe := c.serveClient(ctx, entry, op)
		if oe == nil {
			res.Value, res.Found, res.Swapped, res.Node, res.Hops, res.Index = r.value, r.found, r.swapped, r.node, r.hops, r.index
			res.Outcome = OutcomeOK
			cl.setLeader(r.node, op)
			break
		}
		last = oe
		if oe.unknown && op.Kind != OpGet {
			res.Outcome = OutcomeUnknown
			break
		}
		if op.Node != 0 && errors.Is(oe.err, ErrNodeDown) {
			// The node the caller chose is down: waiting will not help.
			res.Outcome = OutcomeFail
			if oe.unknown && op.Kind != OpGet {
				res.Outcome = OutcomeUnknown
			}
			break
		}
		if op.Node == 0 {
			cl.redirect(entry, oe.hint)
		}
		backoff := time.Duration(5+cl.intn(10)) * time.Millisecond
		select {
		case <-ctx.Done():
		case <-c.clock.After(backoff):
		}
		if ctx.Err() != nil {
			res.Outcome = OutcomeFail
			if last.unknown && op.Kind != OpGet {
				res.Outcome = OutcomeUnknown
			}
			break
		}
	}
	res.Latency = time.Since(start)
	res.RetNs = c.nowNs()
	if res.Outcome != OutcomeOK {
		res.Err = c.diagnose(op, res.Entry, last.err)
	}
	c.record(res)
	return res, res.Err
}

func (cl *Client) intn(n int) int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.rng.Intn(n)
}

// entry picks the node to send op to.
func (cl *Client) entry(op Op) NodeID {
	if op.Node != 0 {
		return op.Node
	}
	if cl.near != 0 {
		return cl.near
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.leader == 0 {
		cl.leader = NodeID(1 + cl.rng.Intn(cl.c.cfg.Nodes))
	}
	return cl.leader
}

func (cl *Client) setLeader(answered NodeID, op Op) {
	if op.Kind == OpGet && op.Mode == ReadStale {
		return
	}
	cl.mu.Lock()
	cl.leader = answered
	cl.mu.Unlock()
}

// redirect follows a leader hint, or tries another node.
func (cl *Client) redirect(tried, hint NodeID) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if hint != 0 && hint != tried {
		cl.leader = hint
		return
	}
	n := cl.c.cfg.Nodes
	cl.leader = NodeID(int(tried)%n + 1)
}

func (c *Cluster) record(res Result) {
	op := res.Op
	rec := Record{
		Client: res.Client, Op: op.Kind, Key: op.Key, Mode: op.Mode, Node: res.Entry,
		CallNs: res.CallNs, ReturnNs: res.RetNs, Outcome: res.Outcome,
		Old: op.Old, New: op.New,
	}
	switch op.Kind {
	case OpPut:
		rec.Value = op.Value
	case OpGet:
		rec.Value, rec.Found = res.Value, res.Found
	case OpCAS:
		rec.Swapped = res.Swapped
	case OpDelete:
		rec.Found = res.Found
	}
	if res.Err != nil {
		rec.Error = res.Err.Error()
	}
	c.hist.add(rec)
}

// diagnose names why an operation did not succeed, with the quorum
// arithmetic when that is the reason.
func (c *Cluster) diagnose(op Op, entry NodeID, err error) error {
	if err == nil {
		err = ErrTimeout
	}
	if errors.Is(err, ErrNoLeader) || errors.Is(err, ErrNotLeader) || errors.Is(err, ErrTimeout) {
		r := len(c.reachable(entry))
		if r < c.quorum() {
			return fmt.Errorf("%s %s: %w (no quorum: node %d reaches %d of %d voters, needs %d)",
				op.Kind, op.Key, err, entry, r, c.cfg.Nodes, c.quorum())
		}
	}
	return fmt.Errorf("%s %s: %w", op.Kind, op.Key, err)
}

func leaderOf(inc *incarnation) NodeID {
	addr, _ := inc.raft.LeaderWithID()
	if addr == "" {
		return 0
	}
	id, _ := addrNode(addr)
	return id
}

// serveClient handles op at node at, as a request from a client next to it.
func (c *Cluster) serveClient(ctx context.Context, at NodeID, op Op) (reply, *opError) {
	return c.serve(ctx, at, op, false)
}

// serve handles op at node at. A request that needs the leader is
// forwarded, once, over the simulated network.
func (c *Cluster) serve(ctx context.Context, at NodeID, op Op, forwarded bool) (reply, *opError) {
	inc := c.current(at)
	if inc == nil {
		return reply{}, &opError{err: fmt.Errorf("node %d: %w (connection refused)", at, ErrNodeDown)}
	}
	var (
		out    reply
		oe     *opError
		next   int // 0 done, 1 run at leader, 2 forward
		leader NodeID
	)
	local := func() {
		isLeader := inc.raft.State() == raft.Leader
		switch {
		case op.Kind == OpGet && op.Mode == ReadStale:
			v, f, _ := inc.fsm.read(op.Key)
			out = reply{value: v, found: f, node: at}
		case op.Kind == OpGet && op.Mode == ReadLease && isLeader:
			v, f, _ := inc.fsm.read(op.Key)
			out = reply{value: v, found: f, node: at}
		case isLeader:
			next = 1
		case forwarded:
			oe = &opError{err: fmt.Errorf("node %d: %w", at, ErrNotLeader), hint: leaderOf(inc)}
		default:
			leader = leaderOf(inc)
			if leader == 0 || leader == at {
				oe = &opError{err: fmt.Errorf("node %d: %w", at, ErrNoLeader)}
			} else {
				next = 2
			}
		}
	}
	if !inc.reqs.do(inc.stop, ctx.Done(), local) {
		return reply{}, c.abandoned(ctx, op, at)
	}
	if oe != nil || next == 0 {
		return out, oe
	}
	if next == 2 {
		r, oe := c.forward(ctx, at, leader, op)
		r.hops++
		return r, oe
	}
	return c.atLeader(ctx, inc, op)
}

// abandoned is the error of a request the node stopped serving (crashed)
// or the client stopped waiting for.
func (c *Cluster) abandoned(ctx context.Context, op Op, at NodeID) *opError {
	if ctx.Err() != nil {
		return &opError{err: fmt.Errorf("node %d did not answer: %w", at, ErrTimeout), unknown: true}
	}
	return &opError{err: fmt.Errorf("node %d: %w", at, ErrNodeDown), unknown: true}
}

// forward sends op from node from to leader to and waits for the answer.
func (c *Cluster) forward(ctx context.Context, from, to NodeID, op Op) (reply, *opError) {
	fctx := ctx
	if op.Kind == OpGet {
		// A read may be retried elsewhere: do not spend the whole budget
		// on a leader that may be gone.
		var cancel context.CancelFunc
		fctx, cancel = context.WithTimeout(ctx, c.timing.RPC)
		defer cancel()
	}
	type answer struct {
		r  reply
		oe *opError
	}
	ch := make(chan answer, 1)
	c.nw.send(from, to, func() {
		go func() {
			r, oe := c.serve(fctx, to, op, true)
			c.nw.send(to, from, func() {
				if inc := c.current(from); inc != nil {
					inc.gate.wait(inc.stop)
				}
				ch <- answer{r, oe}
			})
		}()
	})
	select {
	case a := <-ch:
		return a.r, a.oe
	case <-fctx.Done():
		err := fmt.Errorf("forwarded from node %d to leader %d, no answer: %w", from, to, ErrTimeout)
		if !c.nw.connected(from, to) {
			// The usual case right after a partition: the follower has
			// not timed out yet and still believes in the leader it can
			// no longer reach.
			err = fmt.Errorf("%w (node %d still believes node %d leads, across a cut link: the request was lost on the way or its answer on the way back; the majority side elects a new leader once its followers time out — 'wait leader', then retry)", err, from, to)
		}
		return reply{}, &opError{err: err, unknown: true}
	}
}

// wait waits for a raft future within ctx or until stop closes.
func wait(ctx context.Context, f raft.Future, inc *incarnation) error {
	// Bind the future's shutdown channel to one closed when ctx ends or
	// the node stops, and wait in this goroutine: no goroutine per
	// operation on the hot path.
	abort := make(chan struct{})
	if bindShutdown(f, abort) {
		var once sync.Once
		closeAbort := func() { once.Do(func() { close(abort) }) }
		stopCtx := context.AfterFunc(ctx, closeAbort)
		stopInc := context.AfterFunc(inc.ctx, closeAbort)
		err := f.Error()
		stopCtx()
		stopInc()
		if errors.Is(err, raft.ErrRaftShutdown) && inc.ctx.Err() == nil && ctx.Err() != nil {
			return ErrTimeout
		}
		return err
	}
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ErrTimeout
	case <-inc.stop:
		return raft.ErrRaftShutdown
	}
}

// bindShutdown makes f.Error return raft.ErrRaftShutdown once stop closes.
// hashicorp/raft leaves some futures unresolved when it shuts down (a
// VerifyLeader still queued for the main loop, an Apply handed to the
// state machine goroutine): their Error would block forever. Their
// embedded deferError has an exported ShutdownCh for exactly this, which
// raft sets only on its own restore futures; the lab sets it on the
// futures it waits for. Futures of other shapes are left alone.
// It reports whether it could.
func bindShutdown(f raft.Future, stop chan struct{}) bool {
	v := reflect.ValueOf(f)
	if stop == nil || v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return false
	}
	fld := v.Elem().FieldByName("ShutdownCh")
	if !fld.IsValid() || !fld.CanSet() || fld.Type() != reflect.TypeOf(stop) || !fld.IsNil() {
		return false
	}
	fld.Set(reflect.ValueOf(stop))
	return true
}

// atLeader runs op at inc, which believed itself leader a moment ago.
func (c *Cluster) atLeader(ctx context.Context, inc *incarnation, op Op) (reply, *opError) {
	id := inc.id
	notLeader := func(err error) *opError {
		return &opError{err: fmt.Errorf("node %d: %w: %v", id, ErrNotLeader, err), hint: leaderOf(inc)}
	}
	readLocal := func() (reply, *opError) {
		var out reply
		if !inc.reqs.do(inc.stop, ctx.Done(), func() {
			v, f, _ := inc.fsm.read(op.Key)
			out = reply{value: v, found: f, node: id}
		}) {
			return reply{}, c.abandoned(ctx, op, id)
		}
		return out, nil
	}
	if op.Kind == OpGet {
		switch op.Mode {
		case ReadVerify:
			if err := wait(ctx, inc.raft.VerifyLeader(), inc); err != nil {
				return reply{}, notLeader(err)
			}
			return readLocal()
		case ReadIndex:
			ci, term, err := c.readIndex(ctx, inc)
			if err != nil {
				return reply{}, notLeader(err)
			}
			if err := c.confirmTerm(ctx, inc, term); err != nil {
				return reply{}, notLeader(err)
			}
			if !inc.fsm.waitApplied(lastCommandAtOrBefore(inc, ci), ctx.Done()) {
				return reply{}, &opError{err: fmt.Errorf("node %d: applying %d: %w", id, ci, ErrTimeout)}
			}
			return readLocal()
		case ReadLease:
			// Reached here only if leadership was lost between the check
			// and now.
			return reply{}, notLeader(raft.ErrNotLeader)
		}
	}
	cmd := command{Kind: op.Kind, Key: op.Key, Value: op.Value}
	if op.Kind == OpCAS {
		cmd.Value, cmd.New = op.Old, op.New
	}
	f := inc.raft.Apply(cmd.encode(), c.cfg.OpTimeout)
	err := wait(ctx, f, inc)
	switch {
	case err == nil:
		r, _ := f.Response().(applyResult)
		if r.Err != nil {
			return reply{}, &opError{err: r.Err}
		}
		return reply{value: r.Value, found: r.Found, swapped: r.Swapped, node: id, index: f.Index()}, nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return reply{}, notLeader(err) // never entered the log
	case errors.Is(err, raft.ErrLeadershipLost):
		return reply{}, &opError{err: fmt.Errorf("node %d: leadership lost before commit: %w", id, ErrNoQuorum), unknown: true}
	case errors.Is(err, ErrTimeout):
		return reply{}, &opError{err: fmt.Errorf("node %d: not committed in time: %w", id, ErrTimeout), unknown: true}
	default:
		return reply{}, &opError{err: fmt.Errorf("node %d: %w", id, err), unknown: true}
	}
}

// readIndex returns the commit index a linearizable read must wait for:
// the leader's commit index once it has committed an entry of its own term
// (until then its commit index may lag what earlier leaders committed).
// hashicorp/raft has no ReadIndex; this is the thesis's, section 6.4.
func (c *Cluster) readIndex(ctx context.Context, inc *incarnation) (uint64, uint64, error) {
	for {
		if inc.raft.State() != raft.Leader {
			return 0, 0, raft.ErrNotLeader
		}
		term := inc.raft.CurrentTerm()
		ci := inc.raft.CommitIndex()
		var l raft.Log
		if ci > 0 && inc.logs.GetLog(ci, &l) == nil && l.Term == term {
			return ci, term, nil
		}
		select {
		case <-ctx.Done():
			return 0, 0, ErrTimeout
		case <-inc.stop:
			return 0, 0, raft.ErrRaftShutdown
		case <-time.After(time.Millisecond):
		}
	}
}

// errDeposed: a follower answered a leadership probe from a later term.
var errDeposed = errors.New("a newer term exists")

// confirmTerm is the quorum round of ReadIndex: it asks every other node,
// over the simulated network, for its current term, and succeeds once a
// quorum (this node included) answers with term — messages sent after the
// read began. A node in a later term means this leader is deposed. If no
// newer leader had a quorum when these answers were given, none could have
// committed anything the read must see.
//
// raft.VerifyLeader is not used here: it counts the answer to a heartbeat
// that was already in flight when it was called, so a leader waking from a
// pause can count a follower's acknowledgement from before the election
// that deposed it (the lab's paused-leader tests caught exactly that).
func (c *Cluster) confirmTerm(ctx context.Context, inc *incarnation, term uint64) error {
	need := c.quorum() - 1
	if need == 0 {
		return nil
	}
	type answer struct {
		from NodeID
		term uint64
	}
	ch := make(chan answer, c.cfg.Nodes)
	id := inc.id
	for j := 1; j <= c.cfg.Nodes; j++ {
		to := NodeID(j)
		if to == id {
			continue
		}
		c.nw.send(id, to, func() {
			peer := c.current(to)
			if peer == nil || !peer.gate.wait(peer.stop) {
				return
			}
			t := peer.raft.CurrentTerm()
			c.nw.send(to, id, func() {
				if inc.gate.wait(inc.stop) {
					ch <- answer{from: to, term: t}
				}
			})
		})
	}
	for got := 0; got < need; {
		select {
		case a := <-ch:
			if a.term > term {
				return fmt.Errorf("node %d is in term %d > %d: %w", a.from, a.term, term, errDeposed)
			}
			if a.term == term {
				got++
			}
		case <-ctx.Done():
			return ErrTimeout
		case <-inc.stop:
			return raft.ErrRaftShutdown
		}
	}
	return nil
}

// lastCommandAtOrBefore returns the index of the last command entry at or
// before index: the state machine sees only commands (not the leader's
// no-op or configuration entries), so that is what it must have applied.
// Entries compacted into a snapshot are already in the state machine.
func lastCommandAtOrBefore(inc *incarnation, index uint64) uint64 {
	for i := index; i > 0; i-- {
		var l raft.Log
		if err := inc.logs.GetLog(i, &l); err != nil {
			return 0
		}
		if l.Type == raft.LogCommand {
			return i
		}
	}
	return 0
}
