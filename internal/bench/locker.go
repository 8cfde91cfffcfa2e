package bench

import (
	"context"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/coordkit/coordkit/lock"
)

// Locker is one participant of a benchmark, whatever the implementation
// (coordkit's lock, semaphore or election, etcd's concurrency.Mutex,
// recipes.RWMutex or concurrency.Election, redsync): Lock takes it (a
// lock, a write hold, a semaphore slot, a leadership), Unlock gives it
// back, Close releases what the participant keeps between turns (its
// session, its handle). One call at a time. Every harness measures through
// it; one that needs more (a read hold, a crash) embeds it.
type Locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Close()
}

// CoordkitMutex is a Locker on coordkit's lock.Mutex; Close closes the
// Mutex (and its session).
type CoordkitMutex struct {
	M    *lock.Mutex
	held *lock.Held
}

func (l *CoordkitMutex) Lock(ctx context.Context) error {
	h, err := l.M.Lock(ctx)
	l.held = h
	return err
}

func (l *CoordkitMutex) Unlock(ctx context.Context) error { return l.held.Unlock(ctx) }
func (l *CoordkitMutex) Close()                           { _ = l.M.Close() }

// EtcdMutex is a Locker on etcd's concurrency.Mutex; Close closes S when
// it is set (a participant that shares a session leaves it nil).
type EtcdMutex struct {
	S *concurrency.Session
	M *concurrency.Mutex
}

func (l *EtcdMutex) Lock(ctx context.Context) error   { return l.M.Lock(ctx) }
func (l *EtcdMutex) Unlock(ctx context.Context) error { return l.M.Unlock(ctx) }
func (l *EtcdMutex) Close() {
	if l.S != nil {
		_ = l.S.Close()
	}
}

var (
	_ Locker = (*CoordkitMutex)(nil)
	_ Locker = (*EtcdMutex)(nil)
)
