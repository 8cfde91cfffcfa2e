package lockbench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// rpcCounter counts what a client asks of etcd, by kind: each unary call
// (by method: Txn, Range, Put, DeleteRange, LeaseGrant, ...), each stream
// opened, and each message sent on a stream (a watch create or cancel, a
// keepalive). Installed as the client's interceptors, it sees every
// request, whatever layer of clientv3 or coordkit made it. The counts do
// not depend on the load of the machine: they are the evidence for what
// an operation costs the server, where the timings are noisy.
type rpcCounter struct {
	mu sync.Mutex
	n  map[string]int64
}

func newRPCCounter() *rpcCounter { return &rpcCounter{n: map[string]int64{}} }

func (c *rpcCounter) add(kind string) {
	c.mu.Lock()
	c.n[kind]++
	c.mu.Unlock()
}

// snapshot returns a copy of the counts.
func (c *rpcCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// short is the method's name without its service: "Txn", "LeaseGrant".
func short(method string) string { return method[strings.LastIndex(method, "/")+1:] }

func (c *rpcCounter) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c.add(short(method))
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (c *rpcCounter) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err == nil {
		c.add(short(method) + " stream opened")
		cs = &countedStream{ClientStream: cs, c: c}
	}
	return cs, err
}

type countedStream struct {
	grpc.ClientStream
	c *rpcCounter
}

func (s *countedStream) SendMsg(m any) error {
	switch r := m.(type) {
	case *pb.WatchRequest:
		switch {
		case r.GetCreateRequest() != nil:
			s.c.add("watch create")
		case r.GetCancelRequest() != nil:
			s.c.add("watch cancel")
		default:
			s.c.add("watch progress")
		}
	case *pb.LeaseKeepAliveRequest:
		s.c.add("keepalive")
	default:
		s.c.add("stream message")
	}
	return s.ClientStream.SendMsg(m)
}

// opCounts is what one lock+unlock asked of etcd, on average over a run.
type opCounts struct {
	kv    float64 // KV calls: Txn, Range, Put, DeleteRange, Compact
	watch float64 // watch creates and cancels
	all   string  // every kind that changed, "Txn 2.00, watch create 0.00, ..."
}

// kvMethods are the unary calls of etcd's KV service.
var kvMethods = map[string]bool{"Txn": true, "Range": true, "Put": true, "DeleteRange": true, "Compact": true}

// perOp is the counts from before to after, divided by n operations.
// Keepalives and lease calls are listed in all but not in kv or watch:
// they follow the clock (TTL/3), not the operations.
func perOp(before, after map[string]int64, n int) *opCounts {
	c := &opCounts{}
	var parts []string
	for k, v := range after {
		d := v - before[k]
		if d == 0 {
			continue
		}
		x := float64(d) / float64(n)
		switch {
		case kvMethods[k]:
			c.kv += x
		case k == "watch create" || k == "watch cancel":
			c.watch += x
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", k, x))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	c.all = strings.Join(parts, ", ")
	return c
}
