package primitive

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// Entry is one key of a lock or a semaphore: a holder or a waiter.
type Entry struct {
	Key   string
	Token fencing.Token // the key's create revision
	Lease clientv3.LeaseID
	// Shared is true for a reader of a read-write lock.
	Shared bool
	// Slot is a semaphore holder's slot; -1 for a waiter and for a lock.
	Slot int
	// TTL is what a holder's lease has left on the server: -1 if the lease
	// was gone when asked, 0 for a key without a lease, a waiter, or a
	// failed request.
	TTL time.Duration
}

// Status is what one read saw of a lock or a semaphore.
type Status struct {
	Revision int64   // of the read
	Limit    int     // a semaphore's stored limit; 0 if none (and for a lock)
	Holders  []Entry // a lock's exclusive holder or its readers; a semaphore's slots, by slot
	Waiters  []Entry // in the order they will be served
}

// Held reports whether anybody holds the lock or a slot.
func (s Status) Held() bool { return len(s.Holders) > 0 }

// ReadLock reads who holds the lock c names and who waits for it, in one
// read of its keys at one revision, then asks etcd the remaining TTL of each
// holder's lease. It understands the keys of Mutex, RWMutex,
// concurrency.Mutex, `etcdctl lock` and recipes.RWMutex; keys of other names
// below this one are not its. A semaphore's key under the name is an
// error wrapping session.ErrNameInUse. c must be valid.
func ReadLock(ctx context.Context, client *clientv3.Client, c Config) (Status, error) {
	pfx := c.KeyPrefix()
	resp, err := client.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return Status{}, fmt.Errorf("lock: status %s: %w", c.Name, err)
	}
	own, _, err := OwnLockKeys(c.Name, pfx, resp.Kvs)
	if err != nil {
		return Status{}, err
	}
	entries := make([]Entry, 0, len(own))
	shared := make([]bool, 0, len(own))
	for _, kv := range own {
		e := Entry{Key: string(kv.Key), Token: fencing.Token(kv.CreateRevision), Lease: clientv3.LeaseID(kv.Lease), Slot: -1}
		e.Shared = RoleOf(pfx, e.Key) == RoleReader
		entries = append(entries, e)
		shared = append(shared, e.Shared)
	}
	n := holderCount(shared)
	st := Status{Revision: resp.Header.Revision, Holders: append([]Entry{}, entries[:n]...), Waiters: append([]Entry{}, entries[n:]...)}
	for i := range st.Holders {
		st.Holders[i].TTL = LeaseTTL(ctx, client, st.Holders[i].Lease)
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

// ReadSemaphore reads the limit, the holders and the waiters of the
// semaphore c names in one read at one revision, then asks the remaining
// TTL of each holder's lease. A lock's key under the name is an
// error wrapping session.ErrNameInUse. Keys of other names below this one are not its.
// c must be valid.
func ReadSemaphore(ctx context.Context, client *clientv3.Client, c Config) (Status, error) {
	pfx := c.KeyPrefix()
	resp, err := client.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return Status{}, fmt.Errorf("semaphore: status %s: %w", c.Name, err)
	}
	st := Status{Revision: resp.Header.Revision, Holders: []Entry{}, Waiters: []Entry{}}
	for i, kv := range resp.Kvs {
		key := string(kv.Key)
		e := Entry{Key: key, Slot: -1, Token: fencing.Token(kv.CreateRevision), Lease: clientv3.LeaseID(kv.Lease)}
		switch role := RoleOf(pfx, key); {
		case role.IsLock():
			return Status{}, NameInUse(KindSemaphore, c.Name, key, KindLock)
		case role == RoleSemLimit:
			st.Limit, _ = StoredLimit(resp.Kvs[i : i+1])
		case role == RoleSemQueue:
			st.Waiters = append(st.Waiters, e)
		case role == RoleSemSlot:
			e.Slot, _ = SlotOf(pfx+SemSlotsInfix, key)
			st.Holders = append(st.Holders, e)
		}
	}
	sort.Slice(st.Holders, func(i, j int) bool { return st.Holders[i].Slot < st.Holders[j].Slot })
	for i := range st.Holders {
		st.Holders[i].TTL = LeaseTTL(ctx, client, st.Holders[i].Lease)
	}
	return st, nil
}

// NameInUse is the error of a primitive of kind what that found, under its
// name, key, a key of a primitive of kind other: it matches
// session.ErrNameInUse, and NameTakenBy tells other.
func NameInUse(what Kind, name, key string, other Kind) error {
	kind := other.String()
	if other == KindLock {
		kind = "read-write lock or lock"
	}
	return fmt.Errorf("%s: %w", what, &nameInUseError{other: other, msg: fmt.Sprintf("%v: name %q is a %s's (key %s exists)", session.ErrNameInUse, name, kind, key)})
}

// NameTakenBy reports which kind of primitive holds the name, if err is a
// NameInUse error.
func NameTakenBy(err error) (Kind, bool) {
	var e *nameInUseError
	if errors.As(err, &e) {
		return e.other, true
	}
	return 0, false
}

type nameInUseError struct {
	other Kind
	msg   string
}

func (e *nameInUseError) Error() string        { return e.msg }
func (e *nameInUseError) Is(target error) bool { return target == session.ErrNameInUse }

// OwnLockKeys keeps, of kvs (keys under pfx, the prefix of the lock name),
// the lock's own (RoleOf), and returns the last of the others (another
// name's keys below this one), if any. A semaphore's key is an error: the
// name is a semaphore's. Pure.
func OwnLockKeys(name, pfx string, kvs []*mvccpb.KeyValue) (own []*mvccpb.KeyValue, foreign *mvccpb.KeyValue, err error) {
	for _, kv := range kvs {
		switch role := RoleOf(pfx, string(kv.Key)); {
		case role.IsLock():
			own = append(own, kv)
		case role.IsSemaphore():
			return nil, nil, NameInUse(KindLock, name, string(kv.Key), KindSemaphore)
		default:
			foreign = kv
		}
	}
	return own, foreign, nil
}

// SlotOf parses the slot number of a slot key under slotsPfx; ok is false
// for other keys.
func SlotOf(slotsPfx, key string) (int, bool) {
	s, found := strings.CutPrefix(key, slotsPfx)
	if !found {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || strconv.Itoa(i) != s {
		return 0, false
	}
	return i, true
}

// StoredLimit reads a semaphore's stored limit; ok is false if absent or
// malformed.
func StoredLimit(kvs []*mvccpb.KeyValue) (int, bool) {
	if len(kvs) == 0 {
		return 0, false
	}
	n, err := strconv.Atoi(string(kvs[0].Value))
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}
