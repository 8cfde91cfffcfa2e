package lock

import (
	"context"
	"errors"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// RWMutex is a fenced, FIFO read-write lock on etcd: readers share it, a
// writer excludes everyone. Waiters are served in the order they arrived, so
// a waiting writer holds back the readers that came after it (no writer
// starvation). See the package doc for the key layout and what it
// guarantees.
//
// An RWMutex is one participant, as a Mutex is: it holds the read lock at
// most once and the write lock at most once at a time (RLock while its own
// read lock is held waits for the RUnlock). Do not take both modes on one
// RWMutex at once: the writer would wait for its own reader. Safe for
// concurrent use.
type RWMutex struct {
	r, w *Mutex
}

// NewRWMutex returns an RWMutex named name on client. It takes the same
// options as New (WithLockDelay applies to both modes) and, like New, does
// no I/O. Unless WithSession is given, each mode creates its own session
// when it is first used.
func NewRWMutex(client *clientv3.Client, name string, opts ...Option) (*RWMutex, error) {
	r, err := newMutex(client, name, kindRead, opts...)
	if err != nil {
		return nil, err
	}
	w, err := newMutex(client, name, kindWrite, opts...)
	if err != nil {
		return nil, err
	}
	return &RWMutex{r: r, w: w}, nil
}

// NewReader returns the read mode of the RWMutex named name on its own: a
// Mutex whose Lock and TryLock are RWMutex.RLock and TryRLock (its keys
// NAME/read/<lease hex>, its Held shared), for a process that only reads.
func NewReader(client *clientv3.Client, name string, opts ...Option) (*Mutex, error) {
	return newMutex(client, name, kindRead, opts...)
}

// Name returns the lock's name (without the prefix). Readers are kept under
// prefix+name+"/read/", writers under prefix+name+"/write/".
func (rw *RWMutex) Name() string { return rw.r.name }

// RLock blocks until the read lock is held: no writer (nor any plain mutex
// holder on the same name) that arrived before this reader is left. Its
// token is the create revision of the reader's key. Errors as for
// Mutex.Lock.
func (rw *RWMutex) RLock(ctx context.Context) (*Held, error) { return rw.r.Lock(ctx) }

// TryRLock takes the read lock if no earlier writer holds or waits for it,
// and returns a *LockedError (matching ErrLocked) at once otherwise.
func (rw *RWMutex) TryRLock(ctx context.Context) (*Held, error) { return rw.r.TryLock(ctx) }

// Lock blocks until the write lock is held: every key that arrived before
// this writer (readers, writers, plain mutex holders) is gone. Its token is
// the create revision of the writer's key; successive writers get growing
// tokens. Errors as for Mutex.Lock.
func (rw *RWMutex) Lock(ctx context.Context) (*Held, error) { return rw.w.Lock(ctx) }

// TryLock takes the write lock if nobody holds or waits for the lock, and
// returns a *LockedError (matching ErrLocked) at once otherwise.
func (rw *RWMutex) TryLock(ctx context.Context) (*Held, error) { return rw.w.TryLock(ctx) }

// Close ends both modes as Mutex.Close does.
func (rw *RWMutex) Close() error {
	return errors.Join(rw.r.Close(), rw.w.Close())
}
