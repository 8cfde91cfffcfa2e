package electbench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/session"
)

// preemption is what measurePreemption timed.
type preemption struct {
	// preempt: from the preferred candidate's key appearing in etcd (a
	// watch on the prefix) to its OnStartedLeading, with two candidates
	// queued between the leader and it (they re-queue first).
	preempt []time.Duration
	// fromStart: from the preferred candidate's Run starting (a lease grant
	// and its key's put before it joins) to it leading.
	fromStart []time.Duration
	// commit: one etcd put's round trip, the unit the preemption is
	// counted in.
	commit []time.Duration
}

// measurePreemption runs three priority-1 candidates (one leads, two
// wait) through election.Run, then, rounds times, a priority-10 candidate
// that joins, takes over, and leaves again.
func measurePreemption(ctx context.Context, endpoints []string, rounds int) (preemption, error) {
	var clis []*clientv3.Client
	defer func() {
		for _, c := range clis {
			_ = c.Close()
		}
	}()
	client := func() (*clientv3.Client, error) {
		c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err == nil {
			clis = append(clis, c)
		}
		return c, err
	}
	const name = "preempt"
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type lead struct {
		prio int64
		at   time.Time
	}
	leads := make(chan lead, 64)
	var runs []chan error
	defer func() {
		cancel()
		for _, r := range runs {
			<-r
		}
	}()
	start := func(ctx context.Context, prio int64, id string) (chan error, error) {
		c, err := client()
		if err != nil {
			return nil, err
		}
		e, err := election.New(c, name, election.WithTTL(5*time.Second), election.WithPolicy(election.PolicyPriority),
			election.WithAttributes(election.Attributes{ID: id, Priority: prio}))
		if err != nil {
			return nil, err
		}
		done := make(chan error, 1)
		go func() {
			defer e.Close()
			// A candidate that handed over (or lost) campaigns again, at the
			// back of the line: Run returns after each leadership.
			for {
				err := election.Run(ctx, e, election.RunConfig{Value: id, ReleaseOnCancel: true,
					OnStartedLeading: func(lctx context.Context, _ *election.Leadership) {
						select {
						case leads <- lead{prio, time.Now()}:
						default:
						}
						<-lctx.Done()
					}})
				if ctx.Err() != nil || !errors.Is(err, session.ErrLost) && !errors.Is(err, election.ErrResigned) {
					done <- err
					return
				}
			}
		}()
		return done, nil
	}
	awaitLead := func(prio int64) (time.Time, error) {
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l := <-leads:
				if l.prio == prio {
					return l.at, nil
				}
			case <-timeout:
				return time.Time{}, fmt.Errorf("no priority-%d leader after 30s", prio)
			case <-ctx.Done():
				return time.Time{}, ctx.Err()
			}
		}
	}
	for i := range 3 {
		r, err := start(ctx, 1, fmt.Sprintf("low-%d", i))
		if err != nil {
			return preemption{}, err
		}
		runs = append(runs, r)
		if i == 0 {
			if _, err := awaitLead(1); err != nil {
				return preemption{}, err
			}
		}
	}
	obs, err := client()
	if err != nil {
		return preemption{}, err
	}
	waitQueued := func(n int64) error {
		for {
			resp, err := obs.Get(ctx, name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return err
			}
			if resp.Count >= n {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	var out preemption
	lowLeads := func() error {
		for {
			resp, err := obs.Get(ctx, name+"/", clientv3.WithFirstCreate()...)
			if err != nil {
				return err
			}
			if len(resp.Kvs) > 0 && strings.HasPrefix(string(resp.Kvs[0].Value), "low-") {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	for range rounds {
		if err := waitQueued(3); err != nil {
			return preemption{}, err
		}
		if err := lowLeads(); err != nil {
			return preemption{}, err
		}
		for len(leads) > 0 {
			<-leads
		}
		head, err := obs.Get(ctx, name+"/")
		if err != nil {
			return preemption{}, err
		}
		wctx, wcancel := context.WithCancel(ctx)
		wch := obs.Watch(wctx, name+"/", clientv3.WithPrefix(), clientv3.WithRev(head.Header.Revision+1))
		joined := make(chan time.Time, 1)
		go func() {
			for wr := range wch {
				for _, ev := range wr.Events {
					if ev.Type == mvccpb.PUT && ev.Kv.CreateRevision == ev.Kv.ModRevision {
						joined <- time.Now()
						return
					}
				}
			}
		}()
		pctx, pcancel := context.WithCancel(ctx)
		started := time.Now()
		done, err := start(pctx, 10, "high")
		if err != nil {
			wcancel()
			pcancel()
			return preemption{}, err
		}
		led, err := awaitLead(10)
		if err == nil {
			select {
			case j := <-joined:
				out.preempt = append(out.preempt, led.Sub(j))
				out.fromStart = append(out.fromStart, led.Sub(started))
			case <-time.After(10 * time.Second):
				err = fmt.Errorf("the preferred candidate's key was never seen")
			}
		}
		wcancel()
		pcancel()
		<-done
		if err != nil {
			return preemption{}, err
		}
		if _, err := awaitLead(1); err != nil {
			return preemption{}, err
		}
	}
	for range 20 {
		t := time.Now()
		if _, err := obs.Put(ctx, "preempt-commit-probe", "x"); err != nil {
			return preemption{}, err
		}
		out.commit = append(out.commit, time.Since(t))
	}
	return out, nil
}
