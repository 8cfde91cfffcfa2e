package etcddial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
)

// ErrClusterMismatch: the endpoints belong to more than one etcd cluster.
// Tokens are revisions of one cluster; two clusters' revisions are not
// comparable, and a lock taken on one does not exclude a holder of the
// other. Dial returns it when two endpoints answer with different cluster
// IDs; every later answer from another cluster than the one Dial saw fails
// with it too.
var ErrClusterMismatch = errors.New("etcd endpoints belong to different clusters")

// clusterPin is the cluster ID a client's answers must carry: the one the
// endpoints reported at Dial. Every response header and every message of a
// stream (watch events, keepalive answers) is checked against it.
type clusterPin struct {
	mu   sync.Mutex
	id   uint64 // 0 until Dial has seen an answer
	seen string // the endpoint whose answer set id
}

func (p *clusterPin) set(id uint64, endpoint string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.id, p.seen = id, endpoint
}

// check returns an ErrClusterMismatch error when h is from another cluster
// than the pinned one; from names who answered, asked only for the message
// (every watch event and keepalive answer passes here).
func (p *clusterPin) check(h *pb.ResponseHeader, from func() string) error {
	if h == nil || h.ClusterId == 0 {
		return nil
	}
	p.mu.Lock()
	id, seen := p.id, p.seen
	p.mu.Unlock()
	if id == 0 || h.ClusterId == id {
		return nil
	}
	return fmt.Errorf("%w: %s answered for cluster %x, %s for cluster %x at dial; "+
		"tokens of two clusters are not comparable and their locks do not exclude each other: give --endpoints of one cluster",
		ErrClusterMismatch, from(), h.ClusterId, seen, id)
}

type headered interface{ GetHeader() *pb.ResponseHeader }

func peerAddr(p *peer.Peer) string {
	if p == nil || p.Addr == nil {
		return "an endpoint"
	}
	return p.Addr.String()
}

// dialOptions are the gRPC interceptors that check every answer.
func (p *clusterPin) dialOptions() []grpc.DialOption {
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		var from peer.Peer
		if err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Peer(&from))...); err != nil {
			return err
		}
		if r, ok := reply.(headered); ok {
			return p.check(r.GetHeader(), func() string { return peerAddr(&from) })
		}
		return nil
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return &pinnedStream{ClientStream: s, pin: p}, nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}
}

// pinnedStream checks the header of every message a stream receives.
// (Not with a grpc.Peer call option: a stream writes it when it finishes,
// while messages are read.)
type pinnedStream struct {
	grpc.ClientStream
	pin *clusterPin
}

func (s *pinnedStream) RecvMsg(m any) error {
	if err := s.ClientStream.RecvMsg(m); err != nil {
		return err
	}
	if r, ok := m.(headered); ok {
		return s.pin.check(r.GetHeader(), func() string {
			from, _ := peer.FromContext(s.Context())
			return peerAddr(from)
		})
	}
	return nil
}

// endpointStatus is one endpoint's answer to Status at Dial.
type endpointStatus struct {
	endpoint string
	cluster  uint64
	err      error
}

// statusGrace is how long Dial waits, after the first endpoint answered,
// for the others, to compare their cluster IDs. An endpoint slower than
// that is checked on its first answer (clusterPin).
const statusGrace = 500 * time.Millisecond

// refusedAfter is how long, after the first answer, an endpoint that has
// not answered may take before Dial checks whether anything listens there.
const refusedAfter = 50 * time.Millisecond

// probeClusters asks every endpoint for its status, within timeout, and
// returns once all answered or, after the first answer, within statusGrace.
// An endpoint where nothing listens (its TCP connection refused) counts as
// answered with that error refusedAfter after another endpoint answered:
// etcd's client retries its Status until the deadline, and one member
// down cost every command the whole grace. (With no endpoint answering,
// Dial still waits up to timeout: a member that is restarting may come up.)
// It returns the answers that came, and the last error when none did.
// Different cluster IDs among them are an ErrClusterMismatch error naming
// each endpoint and its cluster.
func probeClusters(ctx context.Context, cli *clientv3.Client, eps []string, timeout time.Duration) ([]endpointStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	answers := make(chan endpointStatus, len(eps))
	answered := make(chan struct{}) // closed at the first answer without error
	for _, ep := range eps {
		go func() {
			// Buffered: the request ends with ctx, which the return below
			// cancels, whether or not anyone still reads it.
			status := make(chan endpointStatus, 1)
			go func() {
				resp, err := cli.Status(ctx, ep)
				st := endpointStatus{endpoint: ep, err: err}
				if err == nil && resp.Header != nil {
					st.cluster = resp.Header.ClusterId
				}
				status <- st
			}()
			// Another endpoint answered and this one, a while later, still
			// has not: does anything listen there? (Only then: a probe
			// connection that a TLS server sees closed unused is a line
			// in its log.)
			select {
			case st := <-status:
				answers <- st
				return
			case <-answered:
			}
			select {
			case st := <-status:
				answers <- st
				return
			case <-time.After(refusedAfter):
			}
			if err := refused(ctx, ep); err != nil {
				answers <- endpointStatus{endpoint: ep, err: err}
				return
			}
			answers <- <-status
		}()
	}
	var ok []endpointStatus
	var last error
	var grace <-chan time.Time
wait:
	for range eps {
		select {
		case st := <-answers:
			if st.err != nil {
				last = st.err
				continue
			}
			ok = append(ok, st)
			if grace == nil {
				close(answered)
				t := time.NewTimer(statusGrace)
				defer t.Stop()
				grace = t.C
			}
		case <-grace:
			break wait
		}
	}
	if len(ok) == 0 {
		return nil, last
	}
	return ok, sameCluster(ok)
}

// refused returns the error of a TCP connection to ep when the connection
// was refused (nothing listens there), nil otherwise: connected, timed out,
// a unix socket.
func refused(ctx context.Context, ep string) error {
	if strings.HasPrefix(ep, "unix") {
		return nil
	}
	hostport, _ := useTLS(ep, nil)
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", hostport)
	if err == nil {
		_ = conn.Close()
		return nil
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return &unreachableError{err: err}
	}
	return nil
}

// sameCluster returns an ErrClusterMismatch error when the answers carry
// more than one cluster ID. Pure.
func sameCluster(sts []endpointStatus) error {
	byCluster := map[uint64][]string{}
	for _, st := range sts {
		byCluster[st.cluster] = append(byCluster[st.cluster], st.endpoint)
	}
	if len(byCluster) < 2 {
		return nil
	}
	var parts []string
	for id, eps := range byCluster {
		sort.Strings(eps)
		parts = append(parts, fmt.Sprintf("%s (cluster %x)", strings.Join(eps, ", "), id))
	}
	sort.Strings(parts)
	return fmt.Errorf("%w: %s; tokens of two clusters are not comparable and their locks do not exclude each other: give --endpoints of one cluster",
		ErrClusterMismatch, strings.Join(parts, " and "))
}
