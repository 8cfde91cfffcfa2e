package coordapi

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/session"
)

// lanes are the agent's sessions. A lock's or an election's key is
// NAME/<lease hex>: one per session and name, so a second hold of a name
// that a lane already holds or waits for takes the next lane, opened when
// there is none. The first lane is the agent's long-lived session; a lane
// whose session was lost gets a new one when it is next taken. Every other
// lane is closed (Session.Close: no more keepalives, the lease ends) once
// nothing has held or waited on it for idle: a burst of holders of one
// name does not leave the agent keeping that many leases alive for the
// rest of its life.
type lanes struct {
	client *clientv3.Client
	opts   []session.Option
	idle   time.Duration

	mu       sync.Mutex
	list     []*lane
	closed   bool
	retiring sync.WaitGroup // lanes being closed after their idle time
	onRetire func(lease clientv3.LeaseID, err error)
}

type lane struct {
	src  *primitive.Lazy // the lane's session, granted anew after a loss
	used map[string]int  // key prefix (PREFIX+NAME+"/" or ".../read/") -> holds and waits on it
	// idleTimer closes the lane once it has been unused for idle (nil
	// while used, and always on the first lane); idleSince counts the
	// times it was armed, so that a timer that fired while the lane was
	// taken and given back acts on nothing (the one armed since will).
	idleTimer *time.Timer
	idleSince int
}

func (ls *lanes) newLane() *lane {
	return &lane{src: primitive.NewLazy(ls.client, nil, ls.opts...), used: map[string]int{}}
}

// newLanes opens the first lane. Other lanes close after idle unused;
// onRetire, when not nil, is told each (the close's error, if any).
func newLanes(ctx context.Context, client *clientv3.Client, idle time.Duration, onRetire func(clientv3.LeaseID, error), opts ...session.Option) (*lanes, error) {
	ls := &lanes{client: client, opts: opts, idle: idle, onRetire: onRetire}
	first := ls.newLane()
	if _, err := first.src.Get(ctx); err != nil {
		return nil, err
	}
	ls.list = []*lane{first}
	return ls, nil
}

// take returns a live session on which nothing else holds or waits for
// keys under occupy, and marks it taken until put. An empty occupy (a
// semaphore, whose keys are per acquisition) takes the first lane. The
// session is got outside ls.mu: granting one anew after a loss takes round
// trips (while etcd does not answer, up to its timeouts), and other holds
// and GET /v1/session must not wait for them.
func (ls *lanes) take(ctx context.Context, occupy string) (*lane, *session.Session, error) {
	l, err := ls.pick(occupy)
	if err != nil {
		return nil, nil, err
	}
	s, err := l.src.Get(ctx)
	if err != nil {
		ls.put(l, occupy)
		if errors.Is(err, session.ErrClosed) && ls.isClosed() {
			err = errShuttingDown
		}
		return nil, nil, err
	}
	return l, s, nil
}

// pick chooses take's lane, opening one when every lane has occupy, and
// marks it.
func (ls *lanes) pick(occupy string) (*lane, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return nil, errShuttingDown
	}
	var l *lane
	for _, c := range ls.list {
		if occupy == "" || c.used[occupy] == 0 {
			l = c
			break
		}
	}
	if l == nil {
		l = ls.newLane()
		ls.list = append(ls.list, l)
	}
	if occupy != "" {
		l.used[occupy]++
		if l.idleTimer != nil {
			l.idleTimer.Stop() // one that already fired finds it changed in retire, under mu
			l.idleTimer = nil
		}
	}
	return l, nil
}

func (ls *lanes) isClosed() bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.closed
}

// put gives back what take marked.
func (ls *lanes) put(l *lane, occupy string) {
	if occupy == "" {
		return
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l.used[occupy]--; l.used[occupy] <= 0 {
		delete(l.used, occupy)
	}
	if len(l.used) == 0 && l != ls.list[0] && !ls.closed && l.idleTimer == nil {
		l.idleSince++
		armed := l.idleSince
		l.idleTimer = time.AfterFunc(ls.idle, func() { ls.retire(l, armed) })
	}
}

// retire closes l, which its idle timer (the armed'th) found unused,
// unless it was taken again since: it leaves the list at once (no take can
// pick it any more),
// and its session is closed (at most a revoke: one round trip) on the
// timer's goroutine.
func (ls *lanes) retire(l *lane, armed int) {
	ls.mu.Lock()
	if ls.closed || l.idleTimer == nil || l.idleSince != armed { // closing, or taken again since
		ls.mu.Unlock()
		return
	}
	l.idleTimer = nil
	i := slices.Index(ls.list, l)
	if i <= 0 {
		ls.mu.Unlock()
		return
	}
	ls.list = slices.Delete(ls.list, i, i+1)
	ls.retiring.Add(1)
	ls.mu.Unlock()
	defer ls.retiring.Done()
	var lease clientv3.LeaseID
	if s := l.src.Current(); s != nil {
		lease = s.Lease()
	}
	err := l.src.Close()
	if ls.onRetire != nil {
		ls.onRetire(lease, err)
	}
}

// first returns the first lane's session (nil if it could not be renewed).
func (ls *lanes) first() *session.Session {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.list[0].src.Current()
}

// renewFirst grants the first lane's session anew each time it is lost,
// without waiting for a hold to take the lane: the agent's session (GET
// /v1/session's alive, the next hold's grant) is back once etcd answers
// again. Attempts that fail are paced by b. onLost is told each loss (the
// session's reason), onRenewed each new session; it returns when ctx ends,
// the lanes close or the client is closed.
func (ls *lanes) renewFirst(ctx context.Context, b session.Backoff, onLost func(lease clientv3.LeaseID, err error), onRenewed func(clientv3.LeaseID)) {
	ls.mu.Lock()
	src := ls.list[0].src
	ls.mu.Unlock()
	for {
		if s := src.Current(); s != nil {
			select {
			case <-s.Done():
			case <-ctx.Done():
				return
			}
			if ls.client.Ctx().Err() != nil {
				return // the client was closed under the API: nothing to renew on
			}
			onLost(s.Lease(), s.Err())
		}
		s, err := backoff.Retry(ctx, func() (*session.Session, error) {
			s, err := src.Get(ctx)
			if err != nil && (errors.Is(err, session.ErrClosed) || ls.client.Ctx().Err() != nil) {
				return nil, backoff.Permanent(err) // the lanes or the client closed
			}
			return s, err
		}, backoff.WithBackOff(b.Exponential()), backoff.WithMaxElapsedTime(0))
		if err != nil {
			return // ctx ended, or nothing to renew on
		}
		onRenewed(s.Lease())
	}
}

// count is the number of lanes.
func (ls *lanes) count() int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return len(ls.list)
}

// close closes every lane's session; take fails afterwards.
func (ls *lanes) close() error {
	ls.mu.Lock()
	if ls.closed {
		ls.mu.Unlock()
		return nil
	}
	ls.closed = true
	var errs []error
	for _, l := range ls.list {
		if l.idleTimer != nil {
			l.idleTimer.Stop()
		}
		errs = append(errs, l.src.Close())
	}
	ls.mu.Unlock()
	ls.retiring.Wait() // a lane being retired is closing its session
	return errors.Join(errs...)
}
