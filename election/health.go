package election

import (
	"fmt"
	"sync"
	"time"
)

// IsLeader reports, without I/O, whether this Election holds a leadership
// that can be trusted at this instant (Leadership.Alive): won by Campaign
// or by Run, not ended, its session's local deadline not passed. It is
// client-go's LeaderElector.IsLeader, from the deadline rather than from
// the last record read.
func (e *Election) IsLeader() bool {
	for _, l := range e.leaderships() {
		if l.Alive() {
			return true
		}
	}
	return false
}

// Check is a health check for a liveness probe: it returns nil unless this
// process acts as the leader of e past the moment it could trust its
// leadership, by more than maxTolerable. It acts as the leader while a
// leadership it won has not ended, and, under Run, until
// OnStartedLeading has returned; it could trust the leadership until its
// session's local deadline, or until the leadership ended if that came
// first. Past that, something is stuck — the timers that end a leadership
// at its deadline did not run, or OnStartedLeading did not return when its
// ctx was cancelled — and the process should be restarted: another
// candidate may lead already. A candidate that does not lead is healthy,
// as in client-go's LeaderElector.Check. Check does no I/O and changes
// nothing.
//
// Serve it on the probe's path:
//
//	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
//		if err := e.Check(10 * time.Second); err != nil {
//			http.Error(w, err.Error(), http.StatusInternalServerError)
//		}
//	})
func (e *Election) Check(maxTolerable time.Duration) error {
	trusted := map[*Leadership]time.Time{}
	for _, l := range e.leaderships() {
		if l.Err() == nil {
			trusted[l] = l.Session().Deadline()
		}
	}
	e.acting.mu.Lock()
	for l, endedAt := range e.acting.m {
		until := l.Session().Deadline()
		if !endedAt.IsZero() && endedAt.Before(until) {
			until = endedAt
		}
		trusted[l] = until
	}
	e.acting.mu.Unlock()
	for l, until := range trusted {
		if late := l.Session().Clock().Now().Sub(until); late > maxTolerable {
			return fmt.Errorf("election: %q: still acting as the leader (token %d) %s after it could trust the leadership", e.name, l.Token(), late.Round(time.Millisecond))
		}
	}
	return nil
}

// leaderships returns the leaderships of e that have not ended (as far as
// the Election has heard).
func (e *Election) leaderships() []*Leadership {
	e.mu.Lock()
	defer e.mu.Unlock()
	ls := make([]*Leadership, 0, len(e.live))
	for l := range e.live {
		ls = append(ls, l)
	}
	return ls
}

// acting is, for Check, the leaderships whose OnStartedLeading runs under
// Run, each with when Run saw it end (zero: not yet). The zero value is
// ready to use.
type acting struct {
	mu sync.Mutex
	m  map[*Leadership]time.Time
}

func (a *acting) begin(l *Leadership) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = make(map[*Leadership]time.Time)
	}
	a.m[l] = time.Time{}
}

// ended records, on the session's clock, that the leadership ended while
// its OnStartedLeading may still run.
func (a *acting) ended(l *Leadership) {
	now := l.Session().Clock().Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.m[l]; ok {
		a.m[l] = now
	}
}

// done records that OnStartedLeading returned.
func (a *acting) done(l *Leadership) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.m, l)
}
