package primitive

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/coordkit/coordkit/fencing"
)

// spelledConfig draws a valid Config whose prefix and name are cut from a
// few segments that the layout gives meaning to (slots, read, queue, a
// lease-like 1f, a slot-like #0), so that different spellings of one key
// space, and names that look like another primitive's keys, are common.
func spelledConfig(t *rapid.T, label string) Config {
	segs := rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "slots", "read", "queue", "0", "1f", "N#0", "team1"}), 1, 4).Draw(t, label+" segments")
	// The same segments spelled as prefix + name: "team1/" + "report",
	// "" + "team1/report", or glued, "team" + "1/report" ("x" + "y" below).
	cut := rapid.IntRange(0, len(segs)-1).Draw(t, label+" cut")
	prefix, name := strings.Join(segs[:cut], "/"), strings.Join(segs[cut:], "/")
	if prefix != "" && rapid.Bool().Draw(t, label+" prefix ends in /") {
		prefix += "/"
	}
	kind := rapid.SampledFrom([]Kind{KindLock, KindSemaphore, KindElection}).Draw(t, label+" kind")
	c := Config{Kind: kind, Name: name, Prefix: prefix}
	if kind == KindSemaphore {
		c.Limit = 1
	}
	return c
}

// heldKey is a key the primitive of c holds: a lock's or an election's
// N/<lease hex> (lease 1f), or a semaphore's slot key.
func heldKey(c Config, slot int) string {
	if c.Kind == KindSemaphore {
		return c.KeyPrefix() + SemSlotsInfix + fmt.Sprint(slot)
	}
	return c.KeyPrefix() + "1f"
}

func scopeOf(c Config, slot int) string {
	if c.Kind == KindSemaphore {
		return c.SlotScope(slot)
	}
	return c.Scope()
}

// Issue 31: equal key spaces ⇔ equal scopes, for any spelling of prefix and
// name. The oracle is the layout itself (RoleOf): b counts a's held key as
// its own — a lock's or election's (one layout) for a lock or an
// election, the same slot for a semaphore — exactly when their scopes are
// equal. So a lock named N#0 and slot 0 of N, a lock named s/slots/0 and
// slot 0 of s, and the two spellings of one lock all come out right.
func TestScopeEqualExactlyWhenKeysAre(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := spelledConfig(t, "a"), spelledConfig(t, "b")
		if a.Validate() != nil || b.Validate() != nil {
			t.Skip("not a valid name")
		}
		i, j := rapid.IntRange(0, 2).Draw(t, "slot a"), rapid.IntRange(0, 2).Draw(t, "slot b")
		key := heldKey(a, i)
		role := RoleOf(b.KeyPrefix(), key)
		var owns bool
		switch {
		case b.Kind == KindSemaphore && role == RoleSemSlot:
			n, _ := SlotOf(b.KeyPrefix()+SemSlotsInfix, key)
			owns = n == j
		case b.Kind != KindSemaphore:
			owns = role == RoleExclusive
		}
		if owns != (scopeOf(a, i) == scopeOf(b, j)) {
			t.Fatalf("a=%+v slot %d (scope %q, key %q), b=%+v slot %d (scope %q): b owns a's key: %t",
				a, i, scopeOf(a, i), key, b, j, scopeOf(b, j), owns)
		}
		require.NoError(t, fencing.ValidateScope(scopeOf(a, i)))
	})
}

// The two spellings the issue reproduced give one scope, and the lock named
// like a slot is not the slot.
func TestScopeExamples(t *testing.T) {
	byPrefix := Config{Kind: KindLock, Name: "report", Prefix: "team1/"}
	byName := Config{Kind: KindLock, Name: "team1/report"}
	require.Equal(t, "team1/report/", byPrefix.Scope())
	require.Equal(t, byPrefix.Scope(), byName.Scope())
	require.NotEqual(t, Config{Kind: KindLock, Name: "report", Prefix: "p1/"}.Scope(), Config{Kind: KindLock, Name: "report", Prefix: "p2/"}.Scope())
	sem := Config{Kind: KindSemaphore, Name: "N", Limit: 1}
	require.Equal(t, "N/slots/0", sem.SlotScope(0))
	require.NotEqual(t, sem.SlotScope(0), Config{Kind: KindLock, Name: "N#0"}.Scope())
	require.NotEqual(t, sem.SlotScope(0), Config{Kind: KindLock, Name: "N/slots/0"}.Scope())
}

// A name whose scope a resource could not take is refused before dialling.
func TestScopeTooLongIsRefused(t *testing.T) {
	long := strings.Repeat("a", fencing.MaxScopeLen-len("/"))
	require.NoError(t, Config{Kind: KindLock, Name: long, TTL: 0}.ValidateKeys())
	err := Config{Kind: KindSemaphore, Name: long, Limit: 1}.ValidateKeys()
	require.ErrorIs(t, err, ErrInvalid)
	require.Contains(t, err.Error(), "fencing scope")
	require.Error(t, Config{Kind: KindLock, Name: long + "a"}.ValidateKeys())
}
