package lock

import (
	"go.etcd.io/etcd/api/v3/mvccpb"
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

// ownKeyGone reports whether a watch event on our own key means the key we
// hold (created at myRev) is no longer ours: deleted, or recreated with
// another create revision.
func ownKeyGone(ev *mvccpb.Event, myRev int64) bool {
	if ev.Type == mvccpb.DELETE {
		return true
	}
	return ev.Kv != nil && ev.Kv.CreateRevision != myRev
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
