package lock

import (
	"sort"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/primitive"
)

// waitVerdict is what a waiter concludes from one look at its key and at the
// keys created before it.
type waitVerdict int

const (
	// verdictHeld: our key is there and nothing was created before it.
	verdictHeld waitVerdict = iota
	// verdictWait: our key is there and a predecessor still exists.
	verdictWait
	// verdictGone: our key vanished (its lease expired or was revoked, or it
	// was deleted) or was replaced by a newer one: we must not claim the lock.
	verdictGone
)

// judgeWait decides a waiter's state from its own key (a range read of
// exactly that key), its create revision and the last key created before it
// (a range read limited to one, sorted by create revision descending, with
// max create revision myRev-1). Pure: no I/O.
func judgeWait(own []*mvccpb.KeyValue, myRev int64, preds []*mvccpb.KeyValue) (waitVerdict, *mvccpb.KeyValue) {
	if len(own) == 0 || own[0].CreateRevision != myRev {
		return verdictGone, nil
	}
	if len(preds) == 0 {
		return verdictHeld, nil
	}
	return verdictWait, preds[0]
}

// predecessorGone reports whether a watch response on a predecessor's key
// says it was deleted: time to look again.
func predecessorGone(evs []*mvccpb.Event) bool {
	for _, ev := range evs {
		if ev.Type == mvccpb.DELETE {
			return true
		}
	}
	return false
}

// keyKind is the role of a Mutex's keys under the lock's prefix.
type keyKind int

const (
	// kindMutex: prefix/<lease>, as concurrency.Mutex. Waits for every key
	// created before it, so it is a writer for an RWMutex on the same name.
	kindMutex keyKind = iota
	// kindRead: prefix/read/<lease>. Waits only for writers created before it.
	kindRead
	// kindWrite: prefix/write/<lease>. Waits for every key created before it.
	kindWrite
)

func (k keyKind) infix() string {
	switch k {
	case kindRead:
		return primitive.ReaderInfix
	case kindWrite:
		return primitive.WriterInfix
	}
	return ""
}

// keyRange is [start, end) in etcd's key space.
type keyRange struct{ start, end string }

// blockingRanges returns the key ranges under pfx whose keys, when created
// before ours, keep a key of kind k from holding the lock. A writer (or a
// plain mutex key) is blocked by everything. A reader is blocked by every key
// that is not a reader's: writers under pfx/write/, and plain mutex keys
// pfx/<lease hex> of Mutex, concurrency.Mutex and etcdctl lock, which are
// exclusive too.
func blockingRanges(pfx string, k keyKind) []keyRange {
	end := clientv3.GetPrefixRangeEnd(pfx)
	if k != kindRead {
		return []keyRange{{pfx, end}}
	}
	r := pfx + primitive.ReaderInfix
	return []keyRange{{pfx, r}, {clientv3.GetPrefixRangeEnd(r), end}}
}

// oldestBlocker returns, from the first-created key of each blocking range,
// the oldest one created before rev: the key that keeps us waiting (nil: we
// hold the lock). Pure.
func oldestBlocker(firsts [][]*mvccpb.KeyValue, rev int64) *mvccpb.KeyValue {
	var best *mvccpb.KeyValue
	for _, kvs := range firsts {
		if len(kvs) == 0 || kvs[0].CreateRevision >= rev {
			continue
		}
		if best == nil || kvs[0].CreateRevision < best.CreateRevision {
			best = kvs[0]
		}
	}
	return best
}

// lastCreated merges range reads sorted by create revision descending into
// one list sorted the same way: its first key is the predecessor. Pure.
func lastCreated(lists [][]*mvccpb.KeyValue) []*mvccpb.KeyValue {
	var out []*mvccpb.KeyValue
	for _, l := range lists {
		out = append(out, l...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreateRevision > out[j].CreateRevision })
	return out
}

func containsKey(kvs []*mvccpb.KeyValue, key string) bool {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return true
		}
	}
	return false
}

// delayLeft is how long a waiter that may take the lock now still has to
// wait: lock delay d after the latest loss it knows of (zero time: none).
func delayLeft(lossAt time.Time, d time.Duration, now time.Time) time.Duration {
	if lossAt.IsZero() || d <= 0 {
		return 0
	}
	return max(lossAt.Add(d).Sub(now), 0)
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// aheadOf returns the keys of lists created before rev, by key. Pure.
func aheadOf(lists [][]*mvccpb.KeyValue, rev int64) map[string]*mvccpb.KeyValue {
	out := make(map[string]*mvccpb.KeyValue)
	for _, l := range lists {
		for _, kv := range l {
			if kv.CreateRevision < rev {
				out[string(kv.Key)] = kv
			}
		}
	}
	return out
}
