package primitive

import (
	"strconv"

	"github.com/coordkit/coordkit/fencing"
)

// The fencing scope of a token is where its key lives in etcd, never how
// the name was spelled:
//
//	lock, read-write lock, election:  the key prefix, Prefix+Name+"/"
//	semaphore slot i:                 the slot's key, Prefix+Name+"/slots/i"
//
// So every spelling that reaches the same keys (--prefix team1/ with the
// name report, or the name team1/report) gets the same scope, and two key
// spaces never share one. A lock's scope ends in "/" and a slot's in a
// digit, so the scopes of a lock and of a slot never meet, whatever the
// names (a lock named s/slots/0 has the scope s/slots/0/). A Mutex, an
// RWMutex and an Election of one name share the layout N/<lease> and
// exclude each other; they share the scope too. A semaphore refuses a name
// that holds lock keys, and the reverse (NameInUse).
//
// What the scope cannot see: an etcd namespace applied inside the client
// (namespace.NewKV) and which etcd cluster granted the token. A program
// that wraps its client in a namespace, or talks to several clusters,
// keeps one resource per namespace or cluster.

// Scope is the fencing scope of a lock's, a read-write lock's or an
// election's token: KeyPrefix.
func (c Config) Scope() string { return c.KeyPrefix() }

// SlotScope is the fencing scope of slot i of a semaphore: the slot's key.
func (c Config) SlotScope(i int) string { return c.KeyPrefix() + SemSlotsInfix + strconv.Itoa(i) }

// maxSlotDigits is the length of the largest slot number a scope names.
const maxSlotDigits = len("2147483647")

// checkScopeLen refuses a name and prefix whose scope a resource could not
// take (fencing.MaxScopeLen bytes).
func (c Config) checkScopeLen() error {
	n := len(c.KeyPrefix())
	if c.Kind == KindSemaphore {
		n += len(SemSlotsInfix) + maxSlotDigits
	}
	if n > fencing.MaxScopeLen {
		return fieldErrorf(FieldName, "%w: prefix and name are %d bytes; their fencing scope would be longer than the %d bytes a resource takes",
			ErrInvalid, len(c.Prefix)+len(c.Name), fencing.MaxScopeLen)
	}
	return nil
}
