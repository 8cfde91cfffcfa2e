package semaphore

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// Entry is one holder or waiter of a semaphore.
type Entry struct {
	Key   string           `json:"key"`
	Slot  int              `json:"slot"`  // -1 for a waiter
	Scope string           `json:"scope"` // fencing scope NAME#slot; empty for a waiter
	Token fencing.Token    `json:"token"` // create revision of the key
	Lease clientv3.LeaseID `json:"lease"`
	// TTL is what the holder's lease has left on the server (-1: gone).
	TTL time.Duration `json:"ttl,omitempty"`
}

// Report is what Status saw of a semaphore at one revision.
type Report struct {
	Name     string  `json:"name"`
	Revision int64   `json:"revision"`
	Limit    int     `json:"limit"`   // 0 if none is stored
	Holders  []Entry `json:"holders"` // by slot
	Waiters  []Entry `json:"waiters"` // in the order they will be served
}

// SemStatus is the old name of Report, kept so that code written against it
// goes on working.
type SemStatus = Report

// Held reports whether any slot is held.
func (s Report) Held() bool { return len(s.Holders) > 0 }

// Status reads the limit, the holders and the waiters of the semaphore named
// name (its prefix, if any, in front) in one read at one revision, then asks
// the remaining TTL of each holder's lease. It returns ErrInvalid for a name
// session.ValidateName refuses, a *session.NameInUseError (ErrNameInUse)
// when a lock holds or waits for the name, and etcd's error if the read
// fails. Keys of other names below this one are not its.
func Status(ctx context.Context, client *clientv3.Client, name string) (Report, error) {
	if err := session.ValidateName(name); err != nil {
		return Report{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	pfx := name + "/"
	resp, err := client.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return Report{}, fmt.Errorf("semaphore: status %s: %w", name, err)
	}
	st := Report{Name: name, Revision: resp.Header.Revision, Holders: []Entry{}, Waiters: []Entry{}}
	for i, kv := range resp.Kvs {
		key := string(kv.Key)
		e := Entry{Key: key, Slot: -1, Token: fencing.Token(kv.CreateRevision), Lease: clientv3.LeaseID(kv.Lease)}
		switch role := session.RoleOf(pfx, key); {
		case role.IsLock():
			return Report{}, lockNameError(name, key)
		case key == pfx+limitSuffix:
			st.Limit, _ = parseLimit(resp.Kvs[i : i+1])
		case strings.HasPrefix(key, pfx+queueInfix):
			st.Waiters = append(st.Waiters, e)
		default:
			if i, ok := slotOf(pfx+slotsInfix, key); ok {
				e.Slot, e.Scope = i, Scope(name, i)
				st.Holders = append(st.Holders, e)
			}
		}
	}
	sort.Slice(st.Holders, func(i, j int) bool { return st.Holders[i].Slot < st.Holders[j].Slot })
	for i := range st.Holders {
		st.Holders[i].TTL = session.LeaseTTL(ctx, client, st.Holders[i].Lease)
	}
	return st, nil
}

// lockNameError says that name is a lock's: key is one of its holders or waiters.
func lockNameError(name, key string) error {
	return fmt.Errorf("semaphore: %w: use coordctl lock (or coordctl lock status)", &session.NameInUseError{Name: name, Key: key, Kind: "lock"})
}
