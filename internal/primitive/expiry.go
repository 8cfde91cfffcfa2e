package primitive

// Revoking a predecessor's lease once it has provably expired.
//
// A waiter whose predecessor's process died waits for that predecessor's
// lease to go. etcd's lessor notices an expired lease on a tick (every
// 500ms) and then revokes it, so left alone the handoff after a crash is
// the TTL plus up to half a second. A waiter that can show the lease has
// expired at the server may revoke it itself, which is exactly what the
// lessor would do on its next tick: this file decides when it can show
// that (expiryJudge, pure) and does it (WatchExpiry).
//
// # What etcd tells a waiter (server/v3 3.7, read in lease/lessor.go and
// etcdserver/v3_server.go)
//
//   - LeaseTimeToLive answers, from the leader's lessor, the remaining time
//     to the lease's expiry E truncated toward zero to whole seconds:
//     reading r ≥ 1 at server time t means E − t ∈ [r, r+1); reading 0
//     means E − t ∈ (−1, 1). It also answers the granted TTL G.
//   - A renewal (LeaseKeepAlive) sets E to the time of the renewal plus G.
//     Renew refuses a lease that has expired (now ≥ E): it waits for the
//     lease's revocation and answers "not found". A new leader's promotion
//     moves E later, never earlier.
//   - Revoke deletes the lease and its keys whoever asks: the lessor on its
//     tick, or a client.
//
// # The rule
//
// Let t0 be the receipt of a reading of 0 (or less) and the readings after
// it, up to a reading L sent at least 1s + expirySlack after t0, all read 0
// or less, each received within G − 1s − 2·expirySlack (maxReadingGap) of
// the previous one's send.
// Then the waiter revokes the lease (after L, which also checks that the
// key it waits for is on that lease). Only for G ≥ 2s.
//
// Why that revocation never takes a lease its holder still believes valid.
// A coordkit holder's belief is its session's local deadline D
// (session/deadline.go): the send time s of the last keepalive it accepted
// + G − margin, and it accepts an answer only while D has not passed
// (deadline.Renewed; after that the session is lost for good, whatever etcd
// answers). The server renewed that keepalive at some t_K > s, so E ≥ t_K +
// G > D from then on (nothing moves E earlier).
//
//  1. No renewal took effect between the reading at t0 and L: one at t_r
//     between two consecutive readings i and i+1 would leave E − t_{i+1} =
//     G − (t_{i+1} − t_r) ≥ G − maxReadingGap > 1s at reading i+1, which
//     would then read 1 or more (t_{i+1} − t_r ≤ recv_{i+1} − send_i ≤
//     maxReadingGap; this is where G ≥ 2s is needed: at G = 1s a renewal
//     reads 0 at once and cannot be told from an expiring lease).
//  2. So the last keepalive the holder accepted by the time of L was renewed
//     before t0, and D < E(t0) < t0 + 1s ≤ send(L) − expirySlack: the
//     holder's deadline passed before L was even sent.
//  3. A keepalive renewed after L is answered after D, so the holder does
//     not accept it (2), whatever the server did with it; and a renewal
//     the server checks after L is refused anyway, since E(t0) < t0 + 1s <
//     the time of L (1).
//
// So at the moment the revocation reaches the server the holder's deadline
// has passed, and for any holder (concurrency.Mutex or etcdctl too) the
// lease has expired at the server: the lessor would revoke it on its next
// tick. The same race etcd has with its own tick remains with ours: a
// renewal that passed Renew's expiry check just before E and refreshes the
// lease while a revocation is under way is answered as renewed; a coordkit
// holder answered after its deadline ignores that answer.
//
// Assumptions, as for the session's deadline: the clocks of the server,
// the holder and the waiter run at the same rate to within expirySlack per
// second (the slack also covers it between two readings) and within the
// session's margin; readings and the revocation reach the same leader's
// view (one member, or a cluster whose leader forwards them; a reading
// during a change of leader fails, which breaks the chain).
//
// Cost: a live lease reading r ≥ 2 is read again when it could first read
// 1 ((r−1)s later); one reading 1 or 0 is read every poll interval, since
// the step to 0 must be seen within that interval. A live lease with G = 2s
// and keepalives every G/3 always reads 1: after a second of that (proof of
// a renewal), only a waiter right behind the holder (head) keeps polling;
// the others read once a second.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/session"
)

const (
	// expirySlack covers clock rate differences over the second a lease
	// must be seen reading 0 (1%).
	expirySlack = 10 * time.Millisecond
	// chainWait is the longest wait between two readings of a chain.
	chainWait = 250 * time.Millisecond
	// minRevokeTTL is the least granted TTL the rule applies to.
	minRevokeTTL = 2 * time.Second
	// DefaultExpiryPoll is how often a lease reading 1 or 0 is read.
	DefaultExpiryPoll = 10 * time.Millisecond
	// expiryFirstRead is how long a wait goes before its first reading: a
	// wait that ends sooner (the usual contended handoff: 32 clients take
	// turns in about 100ms) costs nothing. A lease that already reads 0 at
	// the first reading (its expiry was under 1.25s away when the wait
	// began) is revoked up to that much later than it could have been, and
	// etcd's own tick may come first.
	expiryFirstRead = 250 * time.Millisecond
	// revokeTimeout bounds the revocation.
	revokeTimeout = 5 * time.Second
	// idlePoll is how often a waiter that is not right behind the holder
	// reads a lease that is being renewed.
	idlePoll = time.Second
)

// leaseReading is one LeaseTimeToLive answer, with the waiter's send and
// receive times.
type leaseReading struct {
	sent, received time.Time
	failed         bool  // the request failed: no reading
	gone           bool  // lease not found: already revoked
	ttl            int64 // remaining, whole seconds, truncated
	granted        int64 // granted TTL, seconds
	asked          bool  // the lease's keys were asked for
	keyOn          bool  // the waited-for key is among them
}

// expiryStep is what the judge says after a reading.
type expiryStep struct {
	stop   bool          // nothing more to do (lease gone, TTL too short)
	revoke bool          // revoke now (the reading showed the key on the lease)
	wait   time.Duration // read again after wait
	// headOnly: wait applies only right behind the holder; other waiters
	// read again after idlePoll.
	headOnly bool
	// confirm: the next reading may be the last before a revocation: ask
	// for the lease's keys with it.
	confirm bool
}

// expiryJudge is the pure decision over one lease's readings. Its zero
// value with a poll interval set is ready.
type expiryJudge struct {
	poll     time.Duration
	zeroFrom time.Time // receipt of the first reading of the current chain of readings ≤ 0; zero: none
	lastSent time.Time // send of the last reading of the chain
	oneFrom  time.Time // receipt of the first of consecutive readings of 1
}

// observe takes the next reading and says what to do.
func (j *expiryJudge) observe(r leaseReading) expiryStep {
	switch {
	case r.gone:
		return expiryStep{stop: true}
	case r.failed:
		j.zeroFrom, j.oneFrom = time.Time{}, time.Time{}
		return expiryStep{wait: j.poll}
	case time.Duration(r.granted)*time.Second < minRevokeTTL:
		return expiryStep{stop: true}
	case r.ttl >= 2:
		j.zeroFrom, j.oneFrom = time.Time{}, time.Time{}
		// E ≥ sent + ttl: it cannot read below 1 before sent + ttl − 1s.
		return expiryStep{wait: max(j.poll, r.sent.Add(time.Duration(r.ttl-1)*time.Second).Sub(r.received))}
	case r.ttl == 1:
		j.zeroFrom = time.Time{}
		if j.oneFrom.IsZero() {
			j.oneFrom = r.received
		}
		// Unrenewed, a lease reads 1 for less than a second: reading 1 for
		// longer proves a renewal, a live holder.
		return expiryStep{wait: j.poll, headOnly: r.sent.Sub(j.oneFrom) >= time.Second}
	}
	// ttl ≤ 0: the lease expires within a second, or has expired.
	j.oneFrom = time.Time{}
	if j.zeroFrom.IsZero() || r.received.Sub(j.lastSent) > maxReadingGap(r.granted) {
		j.zeroFrom = r.received
	}
	j.lastSent = r.sent
	due := j.zeroFrom.Add(time.Second + expirySlack)
	switch {
	case r.sent.Before(due):
		wait := min(due.Sub(r.received), chainWait)
		return expiryStep{wait: max(wait, 0), confirm: wait == due.Sub(r.received)}
	case !r.asked:
		return expiryStep{confirm: true} // one more reading, with the keys
	case !r.keyOn:
		return expiryStep{stop: true} // the key is not on this lease: not ours to revoke
	}
	return expiryStep{revoke: true}
}

// maxReadingGap is the longest gap, from a reading's send to the next
// one's receipt, that keeps a chain of readings: a renewal within it still
// reads 1 or more at the next reading (G − gap ≥ 1s, with the slack for
// clock rates).
func maxReadingGap(granted int64) time.Duration {
	return time.Duration(granted)*time.Second - time.Second - 2*expirySlack
}

// ExpiryTarget is a key a waiter waits to be deleted and the lease it is
// on.
type ExpiryTarget struct {
	Key   string
	Lease int64
}

// ExpiryConfig configures WatchExpiry. Poll 0 is DefaultExpiryPoll; Head
// nil counts the waiter as right behind the holder; OnRevoke, if set, is
// called after a revocation this waiter made.
type ExpiryConfig struct {
	Poll     time.Duration
	Head     func(ctx context.Context) bool
	OnRevoke func(ExpiryTarget)
}

// WatchExpiry reads the leases of targets (as the rule above says) until
// ctx ends, and revokes each one once it has provably expired, so that the
// key the caller watches goes now rather than at the lessor's next tick.
// stop ends the reading when the wait ends. It does not wait for the
// readers to return: that would put a goroutine's wake-up on the path of
// every handoff; a reader returns as soon as it runs (a request in flight
// is cancelled; a revocation already sent is finished, which is harmless
// whenever it lands, the lease having expired).
func WatchExpiry(ctx context.Context, client *clientv3.Client, clk session.Clock, targets []ExpiryTarget, cfg ExpiryConfig) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	for _, t := range targets {
		if t.Lease == 0 {
			continue
		}
		go watchOne(ctx, client, clk, t, cfg)
	}
	return cancel
}

func watchOne(ctx context.Context, client *clientv3.Client, clk session.Clock, t ExpiryTarget, cfg ExpiryConfig) {
	j := expiryJudge{poll: cfg.Poll}
	if j.poll <= 0 {
		j.poll = DefaultExpiryPoll
	}
	head := cfg.Head == nil // once right behind the holder, always: a waiter only moves up
	var lastAsked time.Time
	wait, confirm := expiryFirstRead, false
	for {
		if !sleep(ctx, clk, wait) {
			return
		}
		r := readLease(ctx, client, clk, t, confirm)
		if ctx.Err() != nil {
			return
		}
		step := j.observe(r)
		switch {
		case step.stop:
			return
		case step.revoke:
			// Not cancelled with the wait: the revocation's own delete may
			// end the wait before its answer comes.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), revokeTimeout)
			_, err := client.Revoke(rctx, clientv3.LeaseID(t.Lease))
			cancel()
			if err == nil && cfg.OnRevoke != nil {
				cfg.OnRevoke(t)
			}
			return
		}
		wait, confirm = step.wait, step.confirm
		if step.headOnly && !head {
			if now := clk.Now(); now.Sub(lastAsked) >= idlePoll {
				lastAsked, head = now, cfg.Head(ctx)
			}
			if !head {
				wait = max(wait, idlePoll)
			}
		}
	}
}

// readLease reads t's lease, with its keys when withKeys.
func readLease(ctx context.Context, client *clientv3.Client, clk session.Clock, t ExpiryTarget, withKeys bool) leaseReading {
	var opts []clientv3.LeaseOption
	if withKeys {
		opts = append(opts, clientv3.WithAttachedKeys())
	}
	r := leaseReading{sent: clk.Now(), asked: withKeys}
	resp, err := client.TimeToLive(ctx, clientv3.LeaseID(t.Lease), opts...)
	r.received = clk.Now()
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		r.gone = true
	case err != nil:
		r.failed = true
	case resp.TTL == -1 && resp.GrantedTTL == 0:
		r.gone = true // clientv3's answer for a lease not found
	default:
		r.ttl, r.granted = resp.TTL, resp.GrantedTTL
		for _, k := range resp.Keys {
			if string(k) == t.Key {
				r.keyOn = true
				break
			}
		}
	}
	return r
}

// sleep waits d on clk unless ctx ends first.
func sleep(ctx context.Context, clk session.Clock, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := clk.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// LeaseOfKey is the lease a lock's or candidate's key names
// (N/<lease hex>, N/read/…, N/write/…), 0 when it names none. The name is a
// hint: WatchExpiry revokes only a lease the key is attached to.
func LeaseOfKey(pfx, key string) int64 {
	if !RoleOf(pfx, key).IsLock() {
		return 0
	}
	id := key[strings.LastIndex(key, "/")+1:]
	n, err := strconv.ParseUint(id, 16, 64)
	if err != nil {
		return 0
	}
	return int64(n)
}
