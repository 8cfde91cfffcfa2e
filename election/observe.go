package election

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/session"
)

// Observe streams the leader as it changes: first the current one (nil if
// there is none), then one Observation per change of leader key, token or
// value, including nil when the leader key disappears and no candidate is
// left (etcd's concurrency.Election.Observe never reports that). A slow
// reader delays the stream but skips no state it is shown: each observation
// is the leader at some revision, in revision order.
//
// Only keys NAME/<lease hex> are candidates (keys of names below this one
// are not). The channel is closed when ctx is done. If reading from etcd
// fails, or a semaphore's or a read-write lock's key comes before any
// candidate (session.ErrNameInUse, as for Leader), the last observation
// carries Err and the channel is closed.
func (e *Election) Observe(ctx context.Context) <-chan Observation {
	ch := make(chan Observation)
	go e.observe(ctx, ch)
	return ch
}

func sameLeader(a, b *Leader) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func (e *Election) observe(ctx context.Context, ch chan<- Observation) {
	defer close(ch)
	var last *Leader
	first := true
	emit := func(cur *Leader) bool {
		if !first && sameLeader(last, cur) {
			return true
		}
		first = false
		last = cur
		select {
		case ch <- Observation{Leader: cur}:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		first, rev, err := e.leaderKV(ctx)
		if err != nil && !errors.Is(err, session.ErrNameInUse) {
			err = fmt.Errorf("election: observe %q: %w", e.name, err)
		}
		if err != nil {
			if ctx.Err() == nil {
				select {
				case ch <- Observation{Err: err}:
				case <-ctx.Done():
				}
			}
			return
		}
		var cur *Leader
		if first != nil {
			l := leaderOf(first)
			cur = &l
		}
		if !emit(cur) {
			return
		}
		if !e.follow(ctx, cur, rev+1, emit) {
			return
		}
	}
}

// follow watches the prefix from rev and emits what it can decide from the
// events alone: a value change of the leader, or the first key put when
// there was no leader. It returns true when the caller must read the leader
// again (the leader key went, or the watch broke) and false when done.
func (e *Election) follow(ctx context.Context, cur *Leader, rev int64, emit func(*Leader) bool) bool {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wch := e.client.Watch(wctx, e.keyPrefix, clientv3.WithPrefix(), clientv3.WithRev(rev))
	for {
		var wr clientv3.WatchResponse
		var ok bool
		select {
		case <-ctx.Done():
			return false
		case wr, ok = <-wch:
		}
		if !ok || wr.Err() != nil {
			return ctx.Err() == nil
		}
		for _, ev := range wr.Events {
			switch key := string(ev.Kv.Key); {
			case !isCandidate(e.keyPrefix, key):
				if primitive.RoleOf(e.keyPrefix, key) != primitive.RoleForeign {
					return true // a semaphore's or a lock's key: the read says whose
				}
				continue // another name's key (NAME/child/...)
			case cur == nil && ev.Type == mvccpb.PUT:
				l := leaderOf(ev.Kv)
				cur = &l
			case cur != nil && key == cur.Key:
				if ev.Type == mvccpb.DELETE || fencing.Token(ev.Kv.CreateRevision) != cur.Token {
					return true // the leader went: read who is next
				}
				l := *cur
				l.Value = string(ev.Kv.Value)
				cur = &l
			default:
				continue
			}
			if !emit(cur) {
				return false
			}
		}
	}
}
