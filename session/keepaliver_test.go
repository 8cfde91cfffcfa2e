package session

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"pgregory.net/rapid"
)

// tickClock's Now moves forward a millisecond at every call, so every
// reading is distinct and ordered: the book's send time of a request falls
// strictly between the fake stream's readings of the request before and of
// the request itself.
type tickClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTickClock() *tickClock { return &tickClock{now: time.Unix(1000, 0)} }

func (c *tickClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Millisecond)
	return c.now
}

func (c *tickClock) NewTimer(d time.Duration) Timer { return RealClock{}.NewTimer(d) }

// fakeReq is a request as the fake server received it.
type fakeReq struct {
	lease clientv3.LeaseID
	at    time.Time // the clock read inside Send, after the book's
}

// fakeStream is one LeaseKeepAlive stream; the test plays the server.
type fakeStream struct {
	ctx   context.Context
	clk   Clock
	reqs  chan fakeReq
	resps chan *pb.LeaseKeepAliveResponse
	brk   chan error
}

func (s *fakeStream) Send(r *pb.LeaseKeepAliveRequest) error {
	at := s.clk.Now()
	select {
	case s.reqs <- fakeReq{clientv3.LeaseID(r.ID), at}:
		return nil
	case <-s.ctx.Done():
		return io.EOF
	}
}

func (s *fakeStream) Recv() (*pb.LeaseKeepAliveResponse, error) {
	select {
	case r := <-s.resps:
		return r, nil
	case err := <-s.brk:
		return nil, err
	case <-s.ctx.Done():
		return nil, status.FromContextError(s.ctx.Err()).Err()
	}
}

// next waits for the next request the server receives.
func (s *fakeStream) next(t testing.TB) fakeReq {
	t.Helper()
	select {
	case r := <-s.reqs:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no keepalive request for 10s")
		return fakeReq{}
	}
}

func (s *fakeStream) answer(lease clientv3.LeaseID, ttl int64) {
	s.resps <- &pb.LeaseKeepAliveResponse{ID: int64(lease), TTL: ttl}
}

// fakeServer hands out the streams the Keepaliver opens.
type fakeServer struct {
	clk      *tickClock
	streams  chan *fakeStream
	recvErr  error // if set, every stream's Recv fails with it at once
	onceTTL  int64
	onceSeen chan clientv3.LeaseID
	dropped  chan struct{} // one receive per response the Keepaliver dropped
	// leave makes the client's connection leave READY (one send per
	// stream that is to see it).
	leave chan struct{}
}

// surplus sends a response nothing is outstanding for and waits until the
// Keepaliver has dropped it: a surplus still in flight when the next
// request goes out is indistinguishable from its answer (etcd sends none).
func (f *fakeServer) surplus(t testing.TB, s *fakeStream, lease clientv3.LeaseID) {
	t.Helper()
	s.answer(lease, 99)
	select {
	case <-f.dropped:
	case <-time.After(10 * time.Second):
		t.Fatal("surplus response not dropped for 10s")
	}
}

func newFakeKeepaliver(t testing.TB, recvErr error, configure ...func(*Keepaliver)) (*Keepaliver, *fakeServer) {
	f := &fakeServer{recvErr: recvErr, clk: newTickClock(), streams: make(chan *fakeStream, 16), onceTTL: 9, onceSeen: make(chan clientv3.LeaseID, 16), dropped: make(chan struct{}, 64), leave: make(chan struct{}, 1)}
	k := &Keepaliver{
		parent:      context.Background(),
		onUnmatched: func() { f.dropped <- struct{}{} },
		backoff:     Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond},
		openTimeout: 10 * time.Second,
		downWait:    time.Hour, // tests of the stream path wait for it
		perStream:   256,
		maxStreams:  1,
	}
	k.open = func(ctx context.Context) (kaStream, error) {
		s := &fakeStream{ctx: ctx, clk: f.clk, reqs: make(chan fakeReq, 64), resps: make(chan *pb.LeaseKeepAliveResponse, 64), brk: make(chan error, 1)}
		if f.recvErr != nil {
			s.brk <- f.recvErr
		}
		f.streams <- s
		return s, nil
	}
	k.notReady = func(ctx context.Context) bool {
		select {
		case <-f.leave:
			return true
		case <-ctx.Done():
			return false
		}
	}
	k.once = func(ctx context.Context, lease clientv3.LeaseID) (int64, error) {
		f.onceSeen <- lease
		return f.onceTTL, nil
	}
	// Before acquire: the run it starts reads these fields.
	for _, c := range configure {
		c(k)
	}
	k.acquire()
	t.Cleanup(k.release)
	return k, f
}

func (f *fakeServer) stream(t testing.TB) *fakeStream {
	t.Helper()
	select {
	case s := <-f.streams:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no stream opened for 10s")
		return nil
	}
}

// renewAsync runs a renew in the background.
func renewAsync(ctx context.Context, k *Keepaliver, lease clientv3.LeaseID, clk Clock) <-chan kaResult {
	out := make(chan kaResult, 1)
	go func() { out <- k.renew(ctx, lease, clk) }()
	return out
}

func wait(t testing.TB, ch <-chan kaResult) kaResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("renew did not return for 10s")
		return kaResult{}
	}
}

// between checks that a result's send time is that of req: after the
// previous request's reading and before req's own.
func between(t testing.TB, res kaResult, prev, req fakeReq) {
	t.Helper()
	if res.err != nil {
		t.Fatalf("renew: %v", res.err)
	}
	if !res.sentAt.Before(req.at) || !res.sentAt.After(prev.at) {
		t.Fatalf("send time %s is not that of the answered request (sent in (%s, %s))", res.sentAt, prev.at, req.at)
	}
}

func TestKeepaliverPairsEachAnswerWithItsRequest(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, k *Keepaliver, f *fakeServer)
	}{
		{"two leases, answered in order", func(t *testing.T, k *Keepaliver, f *fakeServer) {
			s := f.stream(t)
			a := renewAsync(context.Background(), k, 1, f.clk)
			ra := s.next(t)
			b := renewAsync(context.Background(), k, 2, f.clk)
			rb := s.next(t)
			s.answer(1, 5)
			s.answer(2, 6)
			resA, resB := wait(t, a), wait(t, b)
			between(t, resA, fakeReq{}, ra)
			between(t, resB, ra, rb)
			if resA.ttl != 5 || resB.ttl != 6 {
				t.Fatalf("ttls %d, %d: want 5, 6", resA.ttl, resB.ttl)
			}
		}},
		{"a late answer to an abandoned request is not the next request's", func(t *testing.T, k *Keepaliver, f *fakeServer) {
			s := f.stream(t)
			ctx, cancel := context.WithCancel(context.Background())
			first := renewAsync(ctx, k, 1, f.clk)
			r1 := s.next(t)
			cancel()
			if res := wait(t, first); !errors.Is(res.err, context.Canceled) {
				t.Fatalf("abandoned renew: %v, want context.Canceled", res.err)
			}
			second := renewAsync(context.Background(), k, 1, f.clk)
			r2 := s.next(t)
			s.answer(1, 5) // answers r1, late
			s.answer(1, 7) // answers r2
			res := wait(t, second)
			between(t, res, r1, r2)
			if res.ttl != 7 {
				t.Fatalf("ttl %d: the second request got the first one's answer", res.ttl)
			}
		}},
		{"surplus answers and unknown leases are ignored", func(t *testing.T, k *Keepaliver, f *fakeServer) {
			s := f.stream(t)
			f.surplus(t, s, 1)  // nothing outstanding
			f.surplus(t, s, 99) // never sent for
			got := renewAsync(context.Background(), k, 1, f.clk)
			r := s.next(t)
			s.answer(99, 4)
			s.answer(1, 8)
			res := wait(t, got)
			between(t, res, fakeReq{}, r)
			if res.ttl != 8 {
				t.Fatalf("ttl %d, want 8", res.ttl)
			}
		}},
		{"a lease the server does not know is TTL 0", func(t *testing.T, k *Keepaliver, f *fakeServer) {
			s := f.stream(t)
			got := renewAsync(context.Background(), k, 1, f.clk)
			s.next(t)
			s.answer(1, 0)
			if res := wait(t, got); res.err != nil || res.ttl != 0 {
				t.Fatalf("got ttl %d err %v, want ttl 0 and no error", res.ttl, res.err)
			}
		}},
		{"broken mid-flight: outstanding requests fail, a new stream serves the next", func(t *testing.T, k *Keepaliver, f *fakeServer) {
			s1 := f.stream(t)
			got := renewAsync(context.Background(), k, 1, f.clk)
			s1.next(t)
			s1.brk <- status.Error(codes.Unavailable, "connection reset")
			if res := wait(t, got); !errors.Is(res.err, errStreamBroken) {
				t.Fatalf("renew in flight at the break: %v, want errStreamBroken", res.err)
			}
			s2 := f.stream(t)
			s1.answer(1, 5) // on the dead stream: must reach nobody
			again := renewAsync(context.Background(), k, 1, f.clk)
			r := s2.next(t)
			s2.answer(1, 6)
			res := wait(t, again)
			between(t, res, fakeReq{}, r)
			if res.ttl != 6 {
				t.Fatalf("ttl %d, want 6 (the new stream's answer)", res.ttl)
			}
			if st := k.Stats(); st.StreamsOpened != 2 || st.StreamsBroken != 1 {
				t.Fatalf("stats %+v, want 2 opened, 1 broken", st)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, f := newFakeKeepaliver(t, nil)
			tc.run(t, k, f)
		})
	}
}

func TestKeepaliverFallsBackToOnceWhenTheStreamIsNotServed(t *testing.T) {
	k, f := newFakeKeepaliver(t, status.Error(codes.Unimplemented, "unknown service etcdserverpb.Lease"))
	f.stream(t)
	// A renew can reach the refused stream before its Recv fails: it then
	// fails with the stream, as a session's keepalive would, and is retried.
	// How many renews meet the refused stream depends on the scheduler (it
	// failed after 10 quick tries once, under make test): retry for a
	// bounded time, not a bounded count.
	var res kaResult
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		if res = wait(t, renewAsync(context.Background(), k, 1, f.clk)); !errors.Is(res.err, errStreamBroken) {
			break
		}
	}
	if res.err != nil || res.ttl != 9 {
		t.Fatalf("renew after fallback: ttl %d err %v, want KeepAliveOnce's ttl 9", res.ttl, res.err)
	}
	if got := <-f.onceSeen; got != 1 {
		t.Fatalf("KeepAliveOnce for lease %d, want 1", got)
	}
	if mode, why := k.sendMode(); mode != modeOnce || why == "" {
		t.Fatalf("mode %s (%q), want once with a reason", mode, why)
	}
}

func TestKeepaliverWithoutStreamNeverOpensOne(t *testing.T) {
	f := &fakeServer{clk: newTickClock(), streams: make(chan *fakeStream, 1), onceTTL: 4, onceSeen: make(chan clientv3.LeaseID, 1)}
	k := &Keepaliver{parent: context.Background(), perStream: 1, maxStreams: 1, open: func(context.Context) (kaStream, error) {
		t.Error("a stream was opened")
		return nil, errors.New("no")
	}, once: func(context.Context, clientv3.LeaseID) (int64, error) { return f.onceTTL, nil }}
	k.mode, k.why = modeOnce, "chosen (KeepaliverConfig.WithoutStream)"
	k.acquire()
	defer k.release()
	if res := k.renew(context.Background(), 1, f.clk); res.ttl != 4 || res.err != nil {
		t.Fatalf("renew: ttl %d err %v", res.ttl, res.err)
	}
	if st := k.Stats(); st.OnceCalls != 1 || st.StreamsOpened != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// The property, over the driver and a fake stream: whatever the mix of
// late answers, abandoned waits, surplus and unknown-lease answers and
// breaks, a renew that succeeds carries the send time of the request the
// server answered for it (never a later one), and a renew never returns an
// answer from a stream other than the one its request went out on.
func TestKeepaliverPropertyAnswersCarryTheirOwnSendTime(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		k, f := newFakeKeepaliver(t, nil)
		defer k.release()
		k.acquire() // balanced by the deferred release; Cleanup releases the first
		s := f.stream(t)
		type inflight struct {
			req    fakeReq
			prev   fakeReq
			ttl    int64
			res    <-chan kaResult
			cancel context.CancelFunc
		}
		var (
			last  fakeReq
			queue []*inflight // received by the server, not answered, in order
		)
		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for range steps {
			switch rapid.IntRange(0, 5).Draw(rt, "op") {
			case 0, 1: // a session renews
				lease := clientv3.LeaseID(rapid.IntRange(1, 3).Draw(rt, "lease"))
				ctx, cancel := context.WithCancel(context.Background())
				in := &inflight{res: renewAsync(ctx, k, lease, f.clk), cancel: cancel, prev: last}
				in.req = s.next(t)
				last = in.req
				queue = append(queue, in)
			case 2: // the server answers the oldest
				if len(queue) == 0 {
					continue
				}
				in := queue[0]
				queue = queue[1:]
				in.ttl = int64(rapid.IntRange(1, 30).Draw(rt, "ttl"))
				s.answer(in.req.lease, in.ttl)
				res := wait(t, in.res)
				if res.err != nil {
					if !errors.Is(res.err, context.Canceled) {
						rt.Fatalf("renew: %v", res.err)
					}
					continue // it had given up: its answer went nowhere
				}
				if res.ttl != in.ttl || !res.sentAt.Before(in.req.at) || !res.sentAt.After(in.prev.at) {
					rt.Fatalf("renew got ttl %d sent at %s; the server answered ttl %d for the request sent in (%s, %s)",
						res.ttl, res.sentAt, in.ttl, in.prev.at, in.req.at)
				}
			case 3: // a session gives up waiting
				if len(queue) == 0 {
					continue
				}
				queue[rapid.IntRange(0, len(queue)-1).Draw(rt, "abandon")].cancel()
			case 4: // a surplus or unknown-lease answer
				l := clientv3.LeaseID(rapid.IntRange(1, 4).Draw(rt, "surplus"))
				busy := false
				for _, in := range queue {
					busy = busy || in.req.lease == l
				}
				if !busy {
					f.surplus(t, s, l)
				}
			case 5: // the stream breaks
				if rapid.IntRange(0, 3).Draw(rt, "break") != 0 {
					continue
				}
				s.brk <- status.Error(codes.Unavailable, "reset")
				for _, in := range queue {
					if res := wait(t, in.res); res.err == nil {
						rt.Fatalf("a renew in flight at the break returned an answer (ttl %d)", res.ttl)
					}
				}
				queue, last = nil, fakeReq{}
				s = f.stream(t)
			}
		}
		for _, in := range queue {
			in.cancel()
			wait(t, in.res)
		}
	})
}

// With two streams, each request is answered on the stream it went out on:
// an answer on one never pairs with a request on the other.
func TestKeepaliverStreamsPairIndependently(t *testing.T) {
	k, f := newFakeKeepaliver(t, nil, func(k *Keepaliver) { k.perStream, k.maxStreams = 1, 2 })
	k.acquire() // a second session: a second stream
	defer k.release()
	s0, s1 := f.stream(t), f.stream(t)
	got := renewAsync(context.Background(), k, 2, f.clk) // lease 2 -> stream 0
	var on, off *fakeStream
	select {
	case r := <-s0.reqs:
		on, off = s0, s1
		s0.reqs <- r
	case r := <-s1.reqs:
		on, off = s1, s0
		s1.reqs <- r
	case <-time.After(10 * time.Second):
		t.Fatal("no request")
	}
	r := on.next(t)
	f.surplus(t, off, 2) // the other stream's answer for the same lease: not this request's
	on.answer(2, 7)
	res := wait(t, got)
	between(t, res, fakeReq{}, r)
	if res.ttl != 7 {
		t.Fatalf("ttl %d, want 7 (its own stream's answer)", res.ttl)
	}
	if st := k.Stats(); st.Streams != 2 {
		t.Fatalf("streams %d, want 2", st.Streams)
	}
}

// A keepalive that finds the stream down waits a little for it, then goes
// out with KeepAliveOnce.
func TestKeepaliverSendsOnceWhileTheStreamIsDown(t *testing.T) {
	// The opener never connects. Set before the run starts: replacing it
	// after (release, set, acquire) raced with the first run's connect.
	k, f := newFakeKeepaliver(t, nil, func(k *Keepaliver) {
		k.downWait = time.Millisecond
		k.open = func(ctx context.Context) (kaStream, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}
	})
	res := wait(t, renewAsync(context.Background(), k, 1, f.clk))
	if res.err != nil || res.ttl != 9 {
		t.Fatalf("renew while down: ttl %d err %v, want KeepAliveOnce's ttl 9", res.ttl, res.err)
	}
	if st := k.Stats(); st.OnceCalls != 1 {
		t.Fatalf("stats %+v, want one KeepAliveOnce", st)
	}
	if mode, _ := k.sendMode(); mode != modeStream {
		t.Fatalf("mode %s: a stream that is down is not a fallback for good", mode)
	}
}

// When the client's connection leaves READY (a member stopping gracefully
// sends GOAWAY; it would go on serving the stream already open), the stream
// is ended: the request outstanding on it fails, and the next one goes out
// on a new stream and is paired there.
func TestKeepaliverEndsTheStreamWhenTheConnectionLeavesReady(t *testing.T) {
	k, f := newFakeKeepaliver(t, nil)
	s1 := f.stream(t)
	pending := renewAsync(context.Background(), k, 1, f.clk)
	s1.next(t)
	f.leave <- struct{}{}
	if res := wait(t, pending); !errors.Is(res.err, errStreamBroken) {
		t.Fatalf("request outstanding when the connection left READY: %+v, want errStreamBroken", res)
	}
	s2 := f.stream(t)
	again := renewAsync(context.Background(), k, 1, f.clk)
	req := s2.next(t)
	s2.answer(1, 7)
	res := wait(t, again)
	if res.err != nil || res.ttl != 7 || res.sentAt.After(req.at) {
		t.Fatalf("renew on the new stream: %+v, want ttl 7 sent by %s", res, req.at)
	}
	if st := k.Stats(); st.LeftReady != 1 || st.StreamsBroken != 1 || st.StreamsOpened != 2 || st.OnceCalls != 0 {
		t.Fatalf("stats %+v, want one stream ended for leaving READY and one reopened", st)
	}
}
