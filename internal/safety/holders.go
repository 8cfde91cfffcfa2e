package safety

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/semaphore"
)

// Target is what the clients contend for.
type Target string

// Targets.
const (
	TargetLock     Target = "lock"
	TargetElection Target = "election"
)

// Kind is the kind of coordkit lock a lock-safety run tests.
type Kind string

// Kinds.
const (
	KindMutex     Kind = "mutex"     // lock.Mutex: one holder, scope Scope+"/"
	KindRWMutex   Kind = "rwmutex"   // lock.RWMutex: writers alone (fenced, scope Scope+"/"), readers share
	KindSemaphore Kind = "semaphore" // semaphore.Semaphore: Limit holders, scope Scope+"/slots/i" per slot
)

// LockImpl is the implementation of the lock under test.
type LockImpl string

// Lock implementations.
const (
	LockCoordkit LockImpl = "coordkit" // coordkit's lock, semaphore or election on the embedded etcd cluster
	LockRedsync  LockImpl = "redsync"  // github.com/go-redsync/redsync on a Redis server: no fencing token
)

// Lock is the lock under test as one client sees it: the consumer-side
// interface every implementation (coordkit's mutex, read-write lock,
// semaphore and election; redsync) is adapted to. One per client.
type Lock interface {
	// Acquire blocks until the client holds the lock (or a slot of it).
	Acquire(ctx context.Context) (Tenure, error)
	Close() error
}

// Tenure is one holding of the lock, a slot or a leadership.
type Tenure interface {
	// Token is the fencing token. A token-less lock (redsync) gets one
	// from the harness, in the order its grants returned, so that the
	// checker can order holders; the resource is never fenced with it.
	Token() fencing.Token
	// Scope is the fencing scope the holder sends: for coordkit's locks
	// and election the held key's Scope (Scope+"/", Scope+"/slots/i" for
	// slot i of a semaphore); for redsync and PostgreSQL advisory locks,
	// which have no etcd key, the constant Scope.
	Scope() string
	// Slot is the counter the holder increments: 0, or the semaphore slot.
	Slot() int
	// Reader is true for a read holding of a read-write lock: it only
	// reads the counter.
	Reader() bool
	// Alive is the holder's own belief that it still holds.
	Alive() bool
	Release(ctx context.Context) error
}

// lockFactory makes the Lock of client number client (1-based); cli is the
// client's etcd client (nil for locks that do not use etcd).
type lockFactory func(cli *clientv3.Client, client int) (Lock, error)

// coordkitLocks returns the factory of coordkit's lock of cfg.Kind (or its
// election, for TargetElection).
func coordkitLocks(cfg Config, handovers *handoverCounter) lockFactory {
	ttl := cfg.TTL
	return func(cli *clientv3.Client, client int) (Lock, error) {
		if cfg.Target == TargetElection {
			return newElectionLock(cfg, cli, client, handovers)
		}
		switch cfg.kind() {
		case KindRWMutex:
			rw, err := lock.NewRWMutex(cli, Scope, lock.WithTTL(ttl))
			if err != nil {
				return nil, err
			}
			return rwLock{rw: rw, reader: isReader(client)}, nil
		case KindSemaphore:
			s, err := semaphore.New(cli, Scope, cfg.limit(), semaphore.WithTTL(ttl))
			if err != nil {
				return nil, err
			}
			return semLock{s}, nil
		}
		m, err := lock.New(cli, Scope, lock.WithTTL(ttl))
		if err != nil {
			return nil, err
		}
		return mutexLock{m}, nil
	}
}

// isReader: with a read-write lock, even-numbered clients read and
// odd-numbered ones write (with 5 clients: 3 writers, 2 readers).
func isReader(client int) bool { return client%2 == 0 }

type mutexLock struct{ m *lock.Mutex }

func (a mutexLock) Acquire(ctx context.Context) (Tenure, error) {
	h, err := a.m.Lock(ctx)
	if err != nil {
		return nil, err
	}
	return heldTenure{h: h}, nil
}

func (a mutexLock) Close() error { return a.m.Close() }

type rwLock struct {
	rw     *lock.RWMutex
	reader bool
}

func (a rwLock) Acquire(ctx context.Context) (Tenure, error) {
	lockFn := a.rw.Lock
	if a.reader {
		lockFn = a.rw.RLock
	}
	h, err := lockFn(ctx)
	if err != nil {
		return nil, err
	}
	return heldTenure{h: h, reader: a.reader}, nil
}

func (a rwLock) Close() error { return a.rw.Close() }

type heldTenure struct {
	h      *lock.Held
	reader bool
}

func (t heldTenure) Token() fencing.Token              { return t.h.Token() }
func (t heldTenure) Scope() string                     { return t.h.Scope() }
func (t heldTenure) Slot() int                         { return 0 }
func (t heldTenure) Reader() bool                      { return t.reader }
func (t heldTenure) Alive() bool                       { return t.h.Alive() }
func (t heldTenure) Release(ctx context.Context) error { return t.h.Unlock(ctx) }

type semLock struct{ s *semaphore.Semaphore }

func (a semLock) Acquire(ctx context.Context) (Tenure, error) {
	h, err := a.s.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return semTenure{h}, nil
}

func (a semLock) Close() error { return a.s.Close() }

type semTenure struct{ h *semaphore.Held }

func (t semTenure) Token() fencing.Token              { return t.h.Token() }
func (t semTenure) Scope() string                     { return t.h.Scope() }
func (t semTenure) Slot() int                         { return t.h.Slot() }
func (t semTenure) Reader() bool                      { return false }
func (t semTenure) Alive() bool                       { return t.h.Alive() }
func (t semTenure) Release(ctx context.Context) error { return t.h.Release(ctx) }

type electionLock struct {
	e     *election.Election
	value string
	// With a policy: how a leadership ends (handover.go).
	handover *handoverChooser
}

func (a electionLock) Acquire(ctx context.Context) (Tenure, error) {
	l, err := a.e.Campaign(ctx, a.value)
	if err != nil {
		return nil, err
	}
	return leaderTenure{l, a.handover}, nil
}

func (a electionLock) Close() error { return a.e.Close() }

type leaderTenure struct {
	l        *election.Leadership
	handover *handoverChooser
}

func (t leaderTenure) Token() fencing.Token              { return t.l.Token() }
func (t leaderTenure) Scope() string                     { return t.l.Scope() }
func (t leaderTenure) Slot() int                         { return 0 }
func (t leaderTenure) Reader() bool                      { return false }
func (t leaderTenure) Alive() bool                       { return t.l.Alive() && !yielding(t.l) }
func (t leaderTenure) Release(ctx context.Context) error { return t.handover.release(ctx, t.l) }

// lockTimeout bounds one acquisition of the workload: an in-process
// client's Acquire, and a process client's (coordctl's --timeout, rmw.py's
// wait).
const lockTimeout = 5 * time.Second
