package cli

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/election"
)

// observeProbeEvery is how often coordctl elect --observe asks etcd whether
// it answers: a watch stays silent through an outage.
const observeProbeEvery = time.Second

// observeElection prints the leader on every change until ctx ends. A
// probe tells an outage from a quiet election: when etcd stops answering it
// says so on stderr, and once the shown leader's lease must have expired (no
// answer for longer than its TTL) it prints "no leader known"; when etcd
// answers again it observes afresh and prints the leader.
func observeElection(ctx context.Context, f *factory, p *printer, client *clientv3.Client, e *election.Election) error {
	fmt.Fprintf(f.IO.ErrOut, "observing election %s...\n", e.Name())
	ob := &observer{f: f, p: p, client: client, lastOK: time.Now()}
	probe := time.NewTicker(observeProbeEvery)
	defer probe.Stop()
	probed := make(chan probeResult, 1)
	probing := false
	for ctx.Err() == nil {
		octx, stop := context.WithCancel(ctx)
		obs := e.Observe(octx)
		restart := false
		for !restart && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case o, ok := <-obs:
				switch {
				case !ok:
					restart = true
				case o.Err != nil:
					if ctx.Err() == nil {
						fmt.Fprintf(f.IO.ErrOut, "coordctl: observe %s: %v; observing again\n", e.Name(), o.Err)
					}
					restart = true
				default:
					if err := ob.leader(ctx, o.Leader); err != nil {
						stop()
						return err
					}
				}
			case <-probe.C:
				if !probing {
					probing = true
					go func() { probed <- ob.probe(ctx) }()
				}
			case r := <-probed:
				probing = false
				var err error
				restart, err = ob.probed(r)
				if err != nil {
					stop()
					return err
				}
			}
		}
		stop()
		for range obs { // the observer goroutine ends with octx
		}
		if restart && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond): // a failing etcd is not asked in a tight loop
			}
		}
	}
	if probing {
		<-probed
	}
	return nil
}

// observer is what --observe knows: the leader shown and its lease's TTL,
// and when etcd last answered.
type observer struct {
	f      *factory
	p      *printer
	client *clientv3.Client

	shown    *election.Leader
	leaseTTL time.Duration // the shown leader's granted TTL; 0 unknown
	lastOK   time.Time     // send time of the last answered probe
	down     bool
	unknown  bool // "no leader known" printed since etcd last answered
}

func (ob *observer) leader(ctx context.Context, l *election.Leader) error {
	ev := leaderEvent{Event: "leader"}
	ob.shown, ob.leaseTTL, ob.unknown = l, 0, false
	if l != nil {
		v := l.Value
		ev.Leader, ev.Token = &v, l.Token
		cctx, cancel := ob.f.CommandContext(ctx)
		if resp, err := ob.client.TimeToLive(cctx, l.Lease); err == nil && resp.GrantedTTL > 0 {
			ob.leaseTTL = time.Duration(resp.GrantedTTL) * time.Second
		}
		cancel()
	}
	return ob.p.Print(ev)
}

type probeResult struct {
	sent time.Time
	err  error
}

// probe asks etcd for one key count, requiring a leader, within
// --command-timeout.
func (ob *observer) probe(ctx context.Context) probeResult {
	sent := time.Now()
	cctx, cancel := ob.f.CommandContext(clientv3.WithRequireLeader(ctx))
	defer cancel()
	_, err := ob.client.Get(cctx, "coordctl-probe", clientv3.WithCountOnly())
	return probeResult{sent: sent, err: err}
}

// probed takes a probe's answer; restart reports that etcd answers again
// after "no leader known" was printed, so the leader must be read afresh.
func (ob *observer) probed(r probeResult) (restart bool, err error) {
	if r.err == nil {
		ob.lastOK = r.sent
		if ob.down {
			ob.down = false
			fmt.Fprintln(ob.f.IO.ErrOut, "coordctl: etcd answers again")
		}
		return ob.unknown, nil
	}
	if !ob.down {
		ob.down = true
		fmt.Fprintf(ob.f.IO.ErrOut, "coordctl: etcd does not answer (%v): the leader shown may be gone\n", r.err)
	}
	ttl := ob.leaseTTL
	if ttl == 0 {
		ttl = electDefaultTTL
	}
	if ob.shown != nil && !ob.unknown && time.Since(ob.lastOK) > ttl {
		ob.unknown = true
		reason := fmt.Sprintf("etcd has not answered for %s, longer than the lease TTL %s of the last leader %s (token %d)",
			time.Since(ob.lastOK).Round(time.Second), ttl, ob.shown.Value, ob.shown.Token)
		return false, ob.p.Print(leaderEvent{Event: "unknown", Reason: reason})
	}
	return false, nil
}
