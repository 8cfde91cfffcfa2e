package session_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/session"
)

// newSessions starts n sessions on k's client, a few grants at a time.
func newSessions(t *testing.T, cli *clientv3.Client, n int, opts func(i int) []session.Option) []*session.Session {
	t.Helper()
	out := make([]*session.Session, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				out[i], errs[i] = session.New(context.Background(), cli, opts(i)...)
			}
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, s := range out {
			if s != nil {
				wg.Add(1)
				go func() { defer wg.Done(); _ = s.Close() }()
			}
		}
		wg.Wait()
	})
	for i, err := range errs {
		require.NoError(t, err, "session %d", i)
	}
	return out
}

// A thousand sessions on one client share one stream; when it breaks,
// every one of them renews again on the next stream, and none is lost.
func TestThousandSessionsOnOneClientSurviveAStreamBreak(t *testing.T) {
	_, cli := etcdtest.StartWithClient(t)
	const n = 1000
	k := session.NewKeepaliver(cli, session.KeepaliverConfig{})
	var phase atomic.Int32 // 0: before the break, 1: after
	seen := make([]atomic.Int32, n)
	var renewed [2]atomic.Int64
	done := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	ss := newSessions(t, cli, n, func(i int) []session.Option {
		return []session.Option{
			session.WithKeepaliver(k), session.WithTTL(10 * time.Second), session.WithKeepAliveInterval(time.Second),
			session.WithObserver(func(ev session.Event) {
				p := phase.Load()
				if ev.KeepAliveLatency == 0 || seen[i].Load() > p {
					return
				}
				seen[i].Store(p + 1)
				if renewed[p].Add(1) == n {
					close(done[p])
				}
			}),
		}
	})
	waitAll := func(p int) {
		select {
		case <-done[p]:
		case <-time.After(60 * time.Second):
			t.Fatalf("phase %d: %d of %d sessions renewed within 60s", p, renewed[p].Load(), n)
		}
	}
	waitAll(0)
	phase.Store(1)
	// A session that renewed in phase 0 after the Store counts for phase 1
	// only with a renewal that started after the break.
	for i := range seen {
		seen[i].Store(1)
	}
	streams := k.Stats().Streams
	require.Equal(t, 8, streams, "1,000 sessions at 128 a stream")
	require.Equal(t, streams, k.BreakStream(), "every stream open")
	waitAll(1)
	for i, s := range ss {
		require.True(t, s.Alive(), "session %d lost: %v", i, s.Err())
	}
	st := k.Stats()
	require.GreaterOrEqual(t, st.StreamsBroken, int64(1))
	require.Equal(t, st.StreamsBroken+int64(streams), st.StreamsOpened, "each stream reopened after its break: %+v", st)
	mode, _ := k.Mode()
	require.Equal(t, "stream", mode)
}

// On the stream path a lease revoked behind the session's back ends it
// with ErrRevoked, and the other sessions on the stream carry on.
func TestRevokedLeaseIsErrRevokedOnTheStream(t *testing.T) {
	t.Parallel() // a server of its own
	_, cli := etcdtest.StartWithClient(t)
	ctx := context.Background()
	k := session.NewKeepaliver(cli, session.KeepaliverConfig{})
	renewed := make(chan struct{}, 100)
	ss := newSessions(t, cli, 2, func(i int) []session.Option {
		o := []session.Option{session.WithKeepaliver(k), session.WithTTL(5 * time.Second), session.WithKeepAliveInterval(100 * time.Millisecond)}
		if i == 1 {
			o = append(o, session.WithObserver(func(ev session.Event) {
				if ev.KeepAliveLatency > 0 {
					select {
					case renewed <- struct{}{}:
					default:
					}
				}
			}))
		}
		return o
	})
	_, err := cli.Revoke(ctx, ss[0].Lease())
	require.NoError(t, err)
	select {
	case <-ss[0].Done():
	case <-time.After(10 * time.Second):
		t.Fatal("revocation not noticed")
	}
	require.ErrorIs(t, ss[0].Err(), session.ErrRevoked)
	for len(renewed) > 0 {
		<-renewed
	}
	select {
	case <-renewed:
	case <-time.After(10 * time.Second):
		t.Fatal("the other session stopped renewing")
	}
	require.True(t, ss[1].Alive())
	require.Equal(t, int64(1), k.Stats().StreamsOpened, "the revocation must not break the stream")
	require.Zero(t, k.Stats().OnceCalls)
}

// sendLog is what a client-side interceptor saw of the keepalive streams:
// for each lease, the latest instant the server cannot expire it before,
// from the send time of a request it answered (taken just before the
// request went on the wire) + the TTL it granted − margin.
type sendLog struct {
	margin time.Duration
	mu     sync.Mutex
	bound  map[int64]time.Time
	bad    []string
}

func (l *sendLog) interceptor(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil || method != "/etcdserverpb.Lease/LeaseKeepAlive" {
		return cs, err
	}
	return &loggedStream{ClientStream: cs, log: l, sent: map[int64][]time.Time{}}, nil
}

type loggedStream struct {
	grpc.ClientStream
	log  *sendLog
	mu   sync.Mutex
	sent map[int64][]time.Time // per lease, in order
}

func (s *loggedStream) SendMsg(m any) error {
	if r, ok := m.(*pb.LeaseKeepAliveRequest); ok {
		s.mu.Lock()
		s.sent[r.ID] = append(s.sent[r.ID], time.Now())
		s.mu.Unlock()
	}
	return s.ClientStream.SendMsg(m)
}

func (s *loggedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	r, ok := m.(*pb.LeaseKeepAliveResponse)
	if err != nil || !ok {
		return err
	}
	s.mu.Lock()
	q := s.sent[r.ID]
	var at time.Time
	if len(q) > 0 {
		at, s.sent[r.ID] = q[0], q[1:]
	}
	s.mu.Unlock()
	l := s.log
	l.mu.Lock()
	defer l.mu.Unlock()
	if at.IsZero() {
		l.bad = append(l.bad, fmt.Sprintf("response for lease %x with no request outstanding", r.ID))
		return nil
	}
	if b := at.Add(time.Duration(r.TTL)*time.Second - l.margin); r.TTL > 0 && b.After(l.bound[r.ID]) {
		l.bound[r.ID] = b
	}
	return nil
}

// On every response, the session's deadline is no later than send time +
// TTL − margin of a request the server acknowledged, as measured outside
// the session, on the wire; through a stream break too.
func TestDeadlineNeverPassesAnAcknowledgedSend(t *testing.T) {
	t.Parallel() // a server and a client of its own
	srv := etcdtest.Start(t)
	const margin = 500 * time.Millisecond
	log := &sendLog{margin: margin, bound: map[int64]time.Time{}}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainStreamInterceptor(log.interceptor)},
	})
	require.NoError(t, err)
	defer cli.Close()
	k := session.NewKeepaliver(cli, session.KeepaliverConfig{})
	const n, perSession = 20, 10
	var (
		checked, finished atomic.Int64
		mu                sync.Mutex
		bad               []string
		half              = make(chan struct{})
		all               = make(chan struct{})
		holders           = make([]atomic.Pointer[session.Session], n)
	)
	ss := newSessions(t, cli, n, func(i int) []session.Option {
		var count int
		return []session.Option{
			session.WithKeepaliver(k), session.WithTTL(3 * time.Second), session.WithMargin(margin),
			session.WithKeepAliveInterval(50 * time.Millisecond),
			session.WithObserver(func(ev session.Event) {
				s := holders[i].Load()
				if ev.KeepAliveLatency == 0 || s == nil {
					return
				}
				lease := int64(s.Lease())
				log.mu.Lock()
				b := log.bound[lease]
				log.mu.Unlock()
				if ev.Deadline.After(b) {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("lease %x: deadline %s is %s past the latest acknowledged send + TTL - margin", lease, ev.Deadline.Format(time.StampMicro), ev.Deadline.Sub(b)))
					mu.Unlock()
				}
				if checked.Add(1) == n*perSession/2 {
					close(half)
				}
				if count++; count == perSession && finished.Add(1) == n {
					close(all)
				}
			}),
		}
	})
	for i, s := range ss {
		holders[i].Store(s)
	}
	for _, ch := range []chan struct{}{half, all} {
		select {
		case <-ch:
		case <-time.After(60 * time.Second):
			t.Fatalf("%d of %d sessions renewed %d times within 60s", finished.Load(), n, perSession)
		}
		if ch == half {
			require.Equal(t, 1, k.BreakStream())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, bad)
	log.mu.Lock()
	defer log.mu.Unlock()
	require.Empty(t, log.bad)
	require.GreaterOrEqual(t, k.Stats().StreamsOpened, int64(2))
	for i, s := range ss {
		require.True(t, s.Alive(), "session %d: %v", i, s.Err())
	}
}

// A member that stops gracefully refuses new RPCs at once but serves the
// keepalive stream already open until it ends or the member's stop times
// out (the request timeout, 7s here); the renewals on it are real. The
// Keepaliver ends the stream when the client's connection leaves READY, so
// the sessions stop being renewed there and are lost by their own local
// deadline (TTL 2s), as with KeepAliveOnce. Load-independent assertions:
// at most the one renewal in flight when the stop began is answered after
// it (on the old code the draining stream went on renewing every interval
// until the member's stop timed out), the stream ended because the
// connection left READY, and the sessions are lost as expired. The times
// are logged.
func TestGracefullyStoppingMemberIsNoticed(t *testing.T) {
	srv, cli := etcdtest.StartWithClient(t)
	k := session.NewKeepaliver(cli, session.KeepaliverConfig{})
	const n = 2
	renewed := make(chan struct{}, 1)
	var stopping atomic.Bool
	var after [n]atomic.Int64 // renewals answered after the stop began
	ss := newSessions(t, cli, n, func(i int) []session.Option {
		return []session.Option{
			session.WithKeepaliver(k), session.WithTTL(2 * time.Second),
			session.WithObserver(func(ev session.Event) {
				if ev.KeepAliveLatency == 0 {
					return
				}
				if stopping.Load() {
					after[i].Add(1)
				}
				select {
				case renewed <- struct{}{}:
				default:
				}
			}),
		}
	})
	select {
	case <-renewed:
	case <-time.After(30 * time.Second):
		t.Fatal("no keepalive answered on the stream for 30s")
	}
	require.Zero(t, k.Stats().OnceCalls, "renewed on the stream, not by KeepAliveOnce")

	start := time.Now()
	stopping.Store(true)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		srv.Close()
	}()
	for i, s := range ss {
		select {
		case <-s.Done():
		case <-time.After(60 * time.Second):
			t.Fatalf("session %d still alive 60s after the member began to stop", i)
		}
		require.ErrorIs(t, s.Err(), session.ErrExpired, "session %d", i)
		require.LessOrEqual(t, after[i].Load(), int64(1), "session %d renewed on the draining member's stream", i)
	}
	lost := time.Since(start)
	st := k.Stats()
	require.GreaterOrEqual(t, st.LeftReady, int64(1), "the stream must end when the connection leaves READY: %+v", st)
	<-closed
	t.Logf("sessions lost %s after the stop began; the member's Close returned after %s; %+v", lost, time.Since(start), st)
}
