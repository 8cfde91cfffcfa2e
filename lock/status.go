package lock

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// Mode is how a key holds or waits for a lock.
type Mode string

const (
	// ModeExclusive is a Mutex key, a writer of an RWMutex, or a key of
	// concurrency.Mutex or `etcdctl lock`.
	ModeExclusive Mode = "exclusive"
	// ModeShared is a reader of an RWMutex.
	ModeShared Mode = "shared"
)

// Entry is one key of a lock: a holder or a waiter.
type Entry struct {
	Key   string           `json:"key"`
	Token fencing.Token    `json:"token"` // create revision of the key
	Lease clientv3.LeaseID `json:"lease"`
	Mode  Mode             `json:"mode"`
	// TTL is the time the lease has left on the server (holders only; -1
	// if the lease was gone when asked, 0 for a key without a lease).
	TTL time.Duration `json:"ttl,omitempty"`
}

// Report is what Status saw of a lock at one revision.
type Report struct {
	Name     string  `json:"name"`
	Revision int64   `json:"revision"` // of the read
	Holders  []Entry `json:"holders"`  // one exclusive holder, or readers
	Waiters  []Entry `json:"waiters"`  // in the order they will be served
}

// LockStatus is the old name of Report, kept so that code written against it
// goes on working.
type LockStatus = Report

// Held reports whether anybody holds the lock.
func (s Report) Held() bool { return len(s.Holders) > 0 }

// Status reads who holds the lock named name (with its prefix, if any, in
// front: the keys are name+"/...") and who waits for it, in one read of its
// keys at one revision, then asks etcd the remaining TTL of each holder's
// lease. It understands the keys of Mutex, RWMutex, concurrency.Mutex,
// `etcdctl lock` and recipes.RWMutex; keys of other names below this one
// (a lock named name+"/child") are not its. It returns ErrInvalidName for a
// name session.ValidateName refuses, a *session.NameInUseError (ErrNameInUse)
// when the name is a semaphore's, and etcd's error if the read fails; a failed TTL request leaves
// that holder's TTL at 0.
func Status(ctx context.Context, client *clientv3.Client, name string) (Report, error) {
	if err := session.ValidateName(name); err != nil {
		return Report{}, fmt.Errorf("lock: %w", err)
	}
	pfx := name + "/"
	resp, err := client.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return Report{}, fmt.Errorf("lock: status %s: %w", name, err)
	}
	st := Report{Name: name, Revision: resp.Header.Revision, Holders: []Entry{}, Waiters: []Entry{}}
	entries := make([]Entry, 0, len(resp.Kvs))
	shared := make([]bool, 0, len(resp.Kvs))
	own, _, err := splitOwn(name, pfx, resp.Kvs)
	if err != nil {
		return Report{}, err
	}
	for _, kv := range own {
		e := Entry{Key: string(kv.Key), Token: fencing.Token(kv.CreateRevision), Lease: clientv3.LeaseID(kv.Lease), Mode: ModeExclusive}
		if session.RoleOf(pfx, e.Key) == session.RoleReader {
			e.Mode = ModeShared
		}
		entries = append(entries, e)
		shared = append(shared, e.Mode == ModeShared)
	}
	n := holderCount(shared)
	st.Holders = append(st.Holders, entries[:n]...)
	st.Waiters = append(st.Waiters, entries[n:]...)
	for i := range st.Holders {
		st.Holders[i].TTL = session.LeaseTTL(ctx, client, st.Holders[i].Lease)
	}
	return st, nil
}

// holderCount returns how many of the keys, in create order, hold the lock:
// the first one if it is exclusive, else every shared key before the first
// exclusive one. Pure.
func holderCount(shared []bool) int {
	if len(shared) == 0 {
		return 0
	}
	if !shared[0] {
		return 1
	}
	n := 0
	for n < len(shared) && shared[n] {
		n++
	}
	return n
}
