package semaphore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
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
// the remaining TTL of each holder's lease. It returns ErrInvalid for an
// empty name and etcd's error if the read fails.
func Status(ctx context.Context, client *clientv3.Client, name string) (Report, error) {
	if name == "" {
		return Report{}, fmt.Errorf("%w: empty name", ErrInvalid)
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
		switch {
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
		st.Holders[i].TTL = leaseTTL(ctx, client, st.Holders[i].Lease)
	}
	return st, nil
}

func leaseTTL(ctx context.Context, client *clientv3.Client, lease clientv3.LeaseID) time.Duration {
	if lease == clientv3.NoLease {
		return 0
	}
	resp, err := client.TimeToLive(ctx, lease)
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		return -1
	case err != nil:
		return 0
	case resp.TTL < 0:
		return -1
	}
	return time.Duration(resp.TTL) * time.Second
}
