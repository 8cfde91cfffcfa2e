package session

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// kaBook is the pure core of a keepalive stream: the requests sent on one
// LeaseKeepAlive stream and not answered yet, per lease in the order they
// were sent, and which of them a response answers. It does no I/O and
// keeps no clock: the driver passes the send time in, and it is not safe
// for concurrent use (the driver holds a lock around it).
//
// Why matching by order is right: etcd serves a keepalive stream on one
// goroutine, request by request (server/v3 etcdserver/api/v3rpc/lease.go,
// leaseKeepAlive: Recv, LeaseRenew, Send), and a gRPC stream delivers its
// messages once and in order, so the k-th response for a lease on a stream
// answers the k-th request for that lease on that stream. The book pops the
// oldest outstanding request for the lease, so the send time it hands back
// is that of the request the server renewed for: the server received it
// after that instant, and so cannot expire the lease before send time + TTL.
//
// Three rules keep that true when something goes wrong:
//   - A request whose sender gave up waiting (its deadline passed, the
//     session closed) stays in the book until its response comes: removing
//     it would pair its response with the next, later request, and move a
//     deadline past what the server granted.
//   - A response for a lease with nothing outstanding (a surplus or
//     duplicate, a lease the book never sent for) is dropped: there is no
//     send time to measure from.
//   - A broken stream drains the book: its requests can never be answered,
//     and a new stream gets a new, empty book, so no response on it can be
//     paired with a request sent on the old one.
type kaBook struct {
	pending map[clientv3.LeaseID][]kaPending
	n       int
}

// kaPending is one request sent and not answered yet.
type kaPending struct {
	sentAt time.Time
	// reply receives the answer; buffered (1), so answering never blocks
	// even when the sender stopped waiting. Nil in tests of the book alone.
	reply chan<- kaResult
}

// kaResult is the outcome of one keepalive: when the request the server
// answered was sent, and the TTL it granted (0 or less: the server does
// not know the lease), or why there is no answer.
type kaResult struct {
	sentAt time.Time
	ttl    int64
	err    error
}

// sent records a request for lease sent at sentAt.
func (b *kaBook) sent(lease clientv3.LeaseID, p kaPending) {
	if b.pending == nil {
		b.pending = map[clientv3.LeaseID][]kaPending{}
	}
	b.pending[lease] = append(b.pending[lease], p)
	b.n++
}

// answer pairs a response for lease with the oldest request outstanding for
// it and removes that request. ok is false for a response nothing is
// outstanding for; it must then be ignored.
func (b *kaBook) answer(lease clientv3.LeaseID) (p kaPending, ok bool) {
	q := b.pending[lease]
	if len(q) == 0 {
		return kaPending{}, false
	}
	p = q[0]
	q[0] = kaPending{} // let the reply channel go
	if len(q) == 1 {
		delete(b.pending, lease)
	} else {
		b.pending[lease] = q[1:]
	}
	b.n--
	return p, true
}

// drain removes and returns every outstanding request (the stream broke).
func (b *kaBook) drain() []kaPending {
	out := make([]kaPending, 0, b.n)
	for _, q := range b.pending {
		out = append(out, q...)
	}
	b.pending, b.n = nil, 0
	return out
}

// outstanding is the number of requests not answered yet.
func (b *kaBook) outstanding() int { return b.n }

// alignKeepAlive returns the wait from now until the instant now+d moved to
// the nearest multiple of grid (Unix time), so that keepalives due within
// grid/2 of each other go out together. Moving a keepalive changes when
// it is sent, never what its deadline is measured from. A zero or
// negative grid, or a d shorter than the grid, leaves d as it is.
func alignKeepAlive(now time.Time, d, grid time.Duration) time.Duration {
	if grid <= 0 || d < grid {
		return d
	}
	at := now.Add(d).UnixNano()
	r := at % int64(grid)
	if r < 0 {
		r += int64(grid)
	}
	if r < int64(grid)/2 {
		return d - time.Duration(r)
	}
	return d + time.Duration(int64(grid)-r)
}
