package semaphore

import (
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/coordkit/coordkit/internal/primitive"
)

// Key layout under prefix+name+"/" (primitive's layout table).
const (
	limitSuffix = primitive.SemLimitSuffix
	queueInfix  = primitive.SemQueueInfix
	slotsInfix  = primitive.SemSlotsInfix
)

// choice is what the waiter at the head of the queue decides from one look
// at the slots.
type choice struct {
	slot int           // the slot to take, if take
	take bool          // a slot can be taken now
	wait time.Duration // else, if > 0: a free slot's lock delay ends then
}

// chooseSlot decides which slot the head of the queue takes: the lowest free
// slot in [0, limit) whose lock delay has passed, provided fewer than limit
// slots are held (after a lower SetLimit, slots at or above the limit may
// still be held). lostAt gives, per slot, when the head saw its holder lost.
// Pure.
func chooseSlot(held map[int]bool, limit int, lostAt map[int]time.Time, delay time.Duration, now time.Time) choice {
	if len(held) >= limit {
		return choice{}
	}
	var soonest time.Duration
	for i := range limit {
		if held[i] {
			continue
		}
		left := time.Duration(0)
		if at, ok := lostAt[i]; ok && delay > 0 {
			left = max(at.Add(delay).Sub(now), 0)
		}
		if left == 0 {
			return choice{slot: i, take: true}
		}
		if soonest == 0 || left < soonest {
			soonest = left
		}
	}
	return choice{wait: soonest}
}

// heldSlots maps slot numbers to their keys. Pure.
func heldSlots(slotsPfx string, kvs []*mvccpb.KeyValue) map[int]*mvccpb.KeyValue {
	out := make(map[int]*mvccpb.KeyValue, len(kvs))
	for _, kv := range kvs {
		if i, ok := primitive.SlotOf(slotsPfx, string(kv.Key)); ok {
			out[i] = kv
		}
	}
	return out
}
