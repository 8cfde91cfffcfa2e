package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
)

// errStreamBroken is a keepalive whose stream broke before it was answered.
var errStreamBroken = errors.New("session: keepalive stream broken before the answer")

// errKeepaliverStopped is a keepalive asked of a Keepaliver whose client
// was closed.
var errKeepaliverStopped = errors.New("session: keepalive stream stopped (client closed)")

// keepAliveMode is how a Keepaliver sends keepalives.
type keepAliveMode int

const (
	// modeStream sends every keepalive on one long-lived LeaseKeepAlive
	// stream per client.
	modeStream keepAliveMode = iota
	// modeOnce sends each keepalive with clientv3's KeepAliveOnce, which
	// opens and closes a stream per keepalive: chosen with WithoutStream, or
	// fallen back to when the server does not serve the stream.
	modeOnce
)

func (m keepAliveMode) String() string {
	if m == modeOnce {
		return "once"
	}
	return "stream"
}

// KeepaliverStats counts what a Keepaliver did, for benchmarks and metrics.
type KeepaliverStats struct {
	// Streams is the number of streams kept open now (modeStream).
	Streams int
	// StreamsOpened counts long-lived streams opened (modeStream).
	StreamsOpened int64
	// StreamsBroken counts streams that ended other than by the last
	// session leaving.
	StreamsBroken int64
	// OnceCalls counts keepalives sent with KeepAliveOnce (each one a
	// stream opened and closed).
	OnceCalls int64
	// Unmatched counts responses dropped because no request was
	// outstanding for their lease on their stream (etcd sends none).
	Unmatched int64
	// LeftReady counts streams ended because the client's connection left
	// READY while they were open (a member that stops gracefully: see the
	// package doc). They are counted in StreamsBroken too.
	LeftReady int64
}

// Keepaliver sends the keepalives of every session on one etcd client over
// long-lived LeaseKeepAlive streams: one, and one more per 128 sessions up
// to 64 (WithStreams). Create one per client and give it
// to each session with WithKeepaliver; a session without one gets a
// Keepaliver (and a stream) of its own. The stream is opened when the first
// session starts and closed when the last one ends, so an idle Keepaliver
// holds no goroutine and needs no Close. See the package doc for why the
// local deadline stays safe on the shared stream.
//
// It is safe for concurrent use. It must only be used with sessions on the
// client it was created for.
type Keepaliver struct {
	parent      context.Context // the client's: closing the client stops the stream
	open        func(ctx context.Context) (kaStream, error)
	once        func(ctx context.Context, lease clientv3.LeaseID) (int64, error)
	backoff     Backoff
	openTimeout time.Duration
	batch       time.Duration // the grid keepalives are aligned to (0: none)
	downWait    time.Duration // how long a keepalive waits for a stream that is down

	perStream  int // sessions per stream before another one opens
	maxStreams int
	// anchor opens the client's long-lived watch stream (see holdAnchor);
	// nil in tests without etcd.
	anchor func(ctx context.Context) clientv3.WatchChan
	// notReady blocks until the client's connection is not READY (true)
	// or ctx ends (false); see watchReady. Nil: not watched (tests).
	notReady func(ctx context.Context) bool

	anchorStop context.CancelFunc
	anchorDone chan struct{}

	mu    sync.Mutex
	users int
	runs  []*kaRun // the open streams' lives; only grows while users > 0
	mode  keepAliveMode
	why   string // why modeOnce

	opened, broken, onces, unmatched, leftReady atomic.Int64
	onUnmatched                                 func() // tests: called after a response is dropped
}

// kaStream is the part of a LeaseKeepAlive stream a Keepaliver uses
// (pb.Lease_LeaseKeepAliveClient; a fake in tests).
type kaStream interface {
	Send(*pb.LeaseKeepAliveRequest) error
	Recv() (*pb.LeaseKeepAliveResponse, error)
}

var _ kaStream = pb.Lease_LeaseKeepAliveClient(nil)

// KeepaliverConfig tunes a Keepaliver. The zero value is the default.
type KeepaliverConfig struct {
	// WithoutStream makes every keepalive a KeepAliveOnce (a stream opened
	// and closed per keepalive), as sessions did before the shared stream:
	// for comparison (coordctl bench scale --keepalive once) and for a proxy
	// that cuts long-lived streams.
	WithoutStream bool
	// BatchWindow is the grid the sessions' regular keepalives are aligned
	// to on the stream: each is moved to the nearest multiple of it on the
	// clock (at most half of it earlier or later), so that the keepalives
	// of many sessions go out together and share the writes and reads of
	// the stream instead of costing a system call each. The deadline is
	// still measured from each request's own send time. 0: 50ms; negative:
	// off. No effect without the stream.
	BatchWindow time.Duration
	// PerStream is how many sessions share one stream before the
	// Keepaliver opens another (0: 128), MaxStreams the most streams it
	// opens (0: 64); see acquire for why more than one.
	PerStream, MaxStreams int
	// ReconnectBackoff is the waits between attempts to reopen a broken
	// stream. Zero: Initial 50ms, Max 2s, full jitter.
	ReconnectBackoff Backoff
}

// NewKeepaliver returns a Keepaliver for client. It does no I/O: the stream
// opens with the first session that uses it.
func NewKeepaliver(client *clientv3.Client, cfg KeepaliverConfig) *Keepaliver {
	k := &Keepaliver{
		parent:      client.Ctx(),
		backoff:     Backoff{Initial: 50 * time.Millisecond, Max: 2 * time.Second},
		openTimeout: 5 * time.Second,
		batch:       50 * time.Millisecond,
		downWait:    100 * time.Millisecond,
		perStream:   128,
		maxStreams:  64,
	}
	lc := pb.NewLeaseClient(client.ActiveConnection())
	k.open = func(ctx context.Context) (kaStream, error) {
		// clientv3's own stream (lease.go, resetRecv) goes through the same
		// connection and its interceptors, which add the auth token and the
		// client version; WaitForReady is clientv3's default call option, so
		// the stream waits for a connection instead of failing while the
		// balancer reconnects (the open is bounded by openTimeout).
		return lc.LeaseKeepAlive(ctx, grpc.WaitForReady(true))
	}
	k.notReady = func(ctx context.Context) bool { return connNotReady(ctx, client.ActiveConnection()) }
	k.anchor = func(ctx context.Context) clientv3.WatchChan {
		return client.Watch(clientv3.WithRequireLeader(ctx), anchorKey)
	}
	k.once = func(ctx context.Context, lease clientv3.LeaseID) (int64, error) {
		resp, err := client.KeepAliveOnce(ctx, lease)
		if err != nil {
			return 0, err
		}
		return resp.TTL, nil
	}
	switch {
	case cfg.BatchWindow > 0:
		k.batch = cfg.BatchWindow
	case cfg.BatchWindow < 0:
		k.batch = 0
	}
	if cfg.PerStream > 0 {
		k.perStream = cfg.PerStream
	}
	if cfg.MaxStreams > 0 {
		k.maxStreams = cfg.MaxStreams
	}
	if cfg.ReconnectBackoff != (Backoff{}) {
		k.backoff = cfg.ReconnectBackoff
	}
	if cfg.WithoutStream {
		k.mode, k.why = modeOnce, "chosen (KeepaliverConfig.WithoutStream)"
	}
	return k
}

// WithKeepaliver makes the session send its keepalives through k, whose
// stream it shares with every other session on k. k must belong to the
// session's client.
func WithKeepaliver(k *Keepaliver) Option { return func(c *config) { c.keepaliver = k } }

// sendMode reports how keepalives are sent now: modeStream, or modeOnce with
// the reason (chosen, or the server refused the stream).
func (k *Keepaliver) sendMode() (keepAliveMode, string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.mode, k.why
}

// Stats returns the counts so far.
func (k *Keepaliver) Stats() KeepaliverStats {
	k.mu.Lock()
	n := len(k.runs)
	k.mu.Unlock()
	return KeepaliverStats{Streams: n, StreamsOpened: k.opened.Load(), StreamsBroken: k.broken.Load(), OnceCalls: k.onces.Load(), Unmatched: k.unmatched.Load(), LeftReady: k.leftReady.Load()}
}

// acquire registers a session; the first one starts the stream, and one
// more starts for every perStream sessions, up to maxStreams.
//
// Why more than one: etcd serves a stream's keepalives one after another
// (server/v3 etcdserver/api/v3rpc/lease.go), and a renewal can wait there:
// for a linearizable read when the leader's raft ticks lag (ensureLeadership
// under load), or for the revocation of a lease that already expired on
// the server (lessor.Renew). On one stream every session of the client
// queues behind that wait; measured with 10,000 sessions on one client, one
// stream served 2,050 renewals/s at 8.6% CPU with a p50 of 640 ms, and 1,440
// sessions missed their deadline. A few streams serve in parallel.
func (k *Keepaliver) acquire() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.users++
	if k.users == 1 && k.anchor != nil {
		k.holdAnchor()
	}
	if k.mode != modeStream {
		return
	}
	want := min(max(1, (k.users+k.perStream-1)/k.perStream), k.maxStreams)
	for len(k.runs) < want {
		k.runs = append(k.runs, k.startRun())
	}
}

// release unregisters a session; the last one stops the streams and waits
// for their goroutines.
func (k *Keepaliver) release() {
	k.mu.Lock()
	k.users--
	var runs []*kaRun
	var anchorStop context.CancelFunc
	var anchorDone chan struct{}
	if k.users == 0 {
		runs, k.runs = k.runs, nil
		anchorStop, anchorDone, k.anchorStop, k.anchorDone = k.anchorStop, k.anchorDone, nil, nil
	}
	k.mu.Unlock()
	for _, r := range runs {
		r.cancel()
	}
	for _, r := range runs {
		<-r.done
	}
	if anchorStop != nil {
		anchorStop()
		<-anchorDone
	}
}

// anchorKey is watched, never written: see holdAnchor.
const anchorKey = "\x00coordkit/session/watch-anchor"

// holdAnchor keeps one idle watch open on the client while it has sessions;
// k.mu is held. clientv3 puts every watch whose context carries the same
// metadata on one gRPC stream and closes the stream with its last watch. A
// held key's loss watch (a watch per acquisition, WithRequireLeader) would
// otherwise open and close a stream at every lock and unlock: the anchor
// keeps that stream open, so a loss watch costs a create and a cancel
// message on it. One idle watcher per client on the server.
func (k *Keepaliver) holdAnchor() {
	ctx, cancel := context.WithCancel(k.parent)
	done := make(chan struct{})
	ch := k.anchor(ctx)
	go func() {
		defer close(done)
		for range ch {
		}
	}()
	k.anchorStop, k.anchorDone = cancel, done
}

// align returns the wait from now until the next regular keepalive, due
// after d: d moved to the nearest multiple of the batch window (kabook.go's
// alignKeepAlive). Unchanged in modeOnce and for a Keepaliver with one
// session: there is nothing to share, and aligning the lone sessions of
// many clients would only make their keepalives arrive in bursts.
func (k *Keepaliver) align(now time.Time, d time.Duration) time.Duration {
	k.mu.Lock()
	alone := k.mode == modeOnce || k.users < 2
	k.mu.Unlock()
	if alone {
		return d
	}
	return alignKeepAlive(now, d, k.batch)
}

// renew sends one keepalive for lease and waits for its answer until ctx
// ends. The result's sentAt, read from clk just before the request went on
// the wire, is that of the request the server answered.
func (k *Keepaliver) renew(ctx context.Context, lease clientv3.LeaseID, clk Clock) kaResult {
	for {
		k.mu.Lock()
		mode := k.mode
		var r *kaRun
		if n := len(k.runs); n > 0 {
			// A lease keeps to one stream while their number stays; any
			// stream would do: requests are paired on the stream they went on.
			r = k.runs[uint64(lease)%uint64(n)]
		}
		k.mu.Unlock()
		if mode == modeOnce {
			return k.renewOnce(ctx, lease, clk)
		}
		if r == nil {
			return kaResult{err: errKeepaliverStopped}
		}
		conn, up, err := r.current()
		if err != nil {
			return kaResult{err: err}
		}
		if conn == nil {
			// Down: wait a little for the reconnect, then send this one
			// with KeepAliveOnce, as every keepalive was sent before the
			// shared stream: a stream that a loaded server keeps ending
			// (a renewal that failed there ends the stream) or that waits
			// out a long backoff must not cost a session its deadline.
			t := time.NewTimer(k.downWait)
			select {
			case <-up:
				t.Stop()
			case <-r.done:
				t.Stop()
			case <-t.C:
				return k.renewOnce(ctx, lease, clk)
			case <-ctx.Done():
				t.Stop()
				return kaResult{err: ctx.Err()}
			}
			continue
		}
		return conn.roundTrip(ctx, lease, clk)
	}
}

func (k *Keepaliver) renewOnce(ctx context.Context, lease clientv3.LeaseID, clk Clock) kaResult {
	k.onces.Add(1)
	sentAt := clk.Now()
	ttl, err := k.once(ctx, lease)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return kaResult{sentAt: sentAt}
	}
	return kaResult{sentAt: sentAt, ttl: ttl, err: err}
}

func (k *Keepaliver) dropped() {
	k.unmatched.Add(1)
	if k.onUnmatched != nil {
		k.onUnmatched()
	}
}

// kaRun is one life of the stream: from the first session to the last.
type kaRun struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when loop returns

	mu   sync.Mutex
	conn *kaConn       // nil while down
	up   chan struct{} // closed when conn is set; replaced at each break
	err  error         // why loop returned
}

func (r *kaRun) current() (*kaConn, <-chan struct{}, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conn, r.up, r.err
}

// startRun starts the goroutine that keeps a stream open; k.mu is held.
func (k *Keepaliver) startRun() *kaRun {
	// WithRequireLeader, as clientv3's lessor: a member that loses its
	// leader ends the stream (ErrNoLeader) instead of holding keepalives it
	// cannot serve, and the reconnect can pick another member.
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(k.parent))
	r := &kaRun{ctx: ctx, cancel: cancel, done: make(chan struct{}), up: make(chan struct{})}
	go k.loop(r)
	return r
}

// loop opens the stream, serves it until it breaks, and reopens it after a
// wait drawn from the backoff (full jitter) until the run is cancelled. A
// server that does not serve the stream (Unimplemented) makes the
// Keepaliver fall back to KeepAliveOnce for good.
func (k *Keepaliver) loop(r *kaRun) {
	defer close(r.done)
	bo := k.backoff.Exponential()
	for {
		conn, err := k.connect(r.ctx)
		answered := false
		if err == nil {
			k.opened.Add(1)
			r.mu.Lock()
			r.conn = conn
			close(r.up)
			r.mu.Unlock()
			err = conn.serve(k.dropped, k.watchReady)
			answered = conn.answered.Load()
			r.mu.Lock()
			r.conn, r.up = nil, make(chan struct{})
			r.mu.Unlock()
		}
		if r.ctx.Err() != nil {
			r.stop(errKeepaliverStopped)
			return
		}
		if conn != nil {
			k.broken.Add(1)
		}
		if status.Code(err) == codes.Unimplemented && !answered {
			k.mu.Lock()
			k.mode, k.why = modeOnce, fmt.Sprintf("the server does not serve the keepalive stream: %v", err)
			k.mu.Unlock()
			r.stop(nil)
			return
		}
		if answered {
			bo.Reset()
		}
		t := time.NewTimer(bo.NextBackOff())
		select {
		case <-t.C:
		case <-r.ctx.Done():
			t.Stop()
			r.stop(errKeepaliverStopped)
			return
		}
	}
}

func (r *kaRun) stop(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

// connect opens a stream, waiting at most openTimeout for a connection.
func (k *Keepaliver) connect(ctx context.Context) (*kaConn, error) {
	sctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(k.openTimeout, cancel)
	st, err := k.open(sctx)
	if !timer.Stop() && err == nil {
		err = fmt.Errorf("session: open keepalive stream: no connection within %s", k.openTimeout)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return &kaConn{stream: st, cancel: cancel, out: make(chan kaOut, 256), dead: make(chan struct{})}, nil
}

// watchReady ends the stream (cancel) when the client's connection leaves
// READY while it is open, and returns when ctx ends.
//
// Why: a member that stops gracefully (its gRPC server's GracefulStop)
// sends GOAWAY and refuses new RPCs at once, but serves the streams already
// open until they end or its stop times out (7s for etcd's embed: the
// request timeout). The renewals on such a stream are real, so it is not
// unsafe to stay on it; but a holder on a member that is going away would
// learn it only at that timeout plus its TTL. The client's connection
// leaves READY as soon as the GOAWAY has made its last transport unusable
// for new RPCs, so ending the stream then puts the sessions on the path of
// a stream that is down: a reconnect (to another endpoint, if the client
// has one that is READY) and meanwhile KeepAliveOnce, measured from its own
// send as always. With several endpoints the connection stays READY while
// one member drains; its stream then ends when that member's gRPC server
// closes it, and is reopened on another member (renewed for real until then).
func (k *Keepaliver) watchReady(ctx context.Context, cancel context.CancelFunc) {
	if k.notReady == nil {
		<-ctx.Done()
		return
	}
	if k.notReady(ctx) && ctx.Err() == nil {
		k.leftReady.Add(1)
		cancel()
	}
}

// connNotReady blocks until cc is not READY (true) or ctx ends (false).
func connNotReady(ctx context.Context, cc *grpc.ClientConn) bool {
	for {
		st := cc.GetState()
		if st != connectivity.Ready {
			return true
		}
		if !cc.WaitForStateChange(ctx, st) {
			return false
		}
	}
}

// kaConn is one open stream and its book.
type kaConn struct {
	stream kaStream
	cancel context.CancelFunc
	out    chan kaOut    // requests for the sender
	dead   chan struct{} // closed when the stream broke

	mu       sync.Mutex
	book     kaBook
	answered atomic.Bool // some response came
}

// kaOut is a request waiting for the sender.
type kaOut struct {
	lease clientv3.LeaseID
	clk   Clock
	reply chan kaResult
}

// roundTrip hands a request to the sender and waits for its answer.
func (c *kaConn) roundTrip(ctx context.Context, lease clientv3.LeaseID, clk Clock) kaResult {
	reply := make(chan kaResult, 1)
	select {
	case c.out <- kaOut{lease: lease, clk: clk, reply: reply}:
	case <-c.dead:
		return kaResult{err: errStreamBroken}
	case <-ctx.Done():
		return kaResult{err: ctx.Err()}
	}
	select {
	case res := <-reply:
		return res
	case <-c.dead:
		select {
		case res := <-reply: // answered just before the break
			return res
		default:
			return kaResult{err: errStreamBroken}
		}
	case <-ctx.Done():
		// The request stays in the book until answered (see kaBook).
		return kaResult{err: ctx.Err()}
	}
}

// serve runs the sender and receives responses until the stream breaks;
// it returns the error that broke it. Every request outstanding then is
// answered with errStreamBroken.
func (c *kaConn) serve(dropped func(), watchReady func(ctx context.Context, cancel context.CancelFunc)) error {
	sendErr := make(chan error, 1)
	go func() { sendErr <- c.send() }()
	watchDone := make(chan struct{})
	wctx, stopWatch := context.WithCancel(context.Background())
	go func() {
		defer close(watchDone)
		watchReady(wctx, c.cancel)
	}()
	var err error
	for {
		resp, rerr := c.stream.Recv()
		if rerr != nil {
			err = rerr
			break
		}
		c.mu.Lock()
		p, ok := c.book.answer(clientv3.LeaseID(resp.ID))
		c.mu.Unlock()
		if !ok {
			dropped() // surplus, or a lease this stream never sent for
			continue
		}
		c.answered.Store(true)
		p.reply <- kaResult{sentAt: p.sentAt, ttl: resp.TTL}
	}
	c.cancel()
	stopWatch()
	<-watchDone
	close(c.dead)
	if serr := <-sendErr; serr != nil && err == nil {
		err = serr
	}
	c.mu.Lock()
	lost := c.book.drain()
	c.mu.Unlock()
	for _, p := range lost {
		p.reply <- kaResult{err: errStreamBroken}
	}
	return err
}

// send writes requests in the order they come, recording each one's send
// time, read just before it goes out, in the book. It returns when the
// stream is dead or a Send fails (which also ends Recv: it cancels the
// stream).
func (c *kaConn) send() error {
	for {
		select {
		case <-c.dead:
			return nil
		case o := <-c.out:
			c.mu.Lock()
			c.book.sent(o.lease, kaPending{sentAt: o.clk.Now(), reply: o.reply})
			c.mu.Unlock()
			if err := c.stream.Send(&pb.LeaseKeepAliveRequest{ID: int64(o.lease)}); err != nil {
				c.cancel()
				return err
			}
		}
	}
}
