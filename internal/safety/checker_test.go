package safety

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// hist builds histories compactly: ops are appended in time order, each
// taking one tick unless given explicit times.
type hist struct {
	h   History
	now int64
}

func (b *hist) op(client int, kind OpKind, token uint64, value int, id string, out Outcome) *hist {
	b.now += 10
	b.h.Ops = append(b.h.Ops, Op{Client: client, Kind: kind, Token: token, Value: value, ID: id, Call: b.now, Return: b.now + 5, Outcome: out})
	return b
}

func (b *hist) logged(token uint64, value int, id string) *hist {
	b.h.Writes = append(b.h.Writes, Write{Seq: uint64(len(b.h.Writes) + 1), Token: token, Value: value, ID: id})
	return b
}

// holder appends one clean tenure: acquire, fence, read v, write v+1 (logged).
func (b *hist) holder(client int, token uint64, read int, id string) *hist {
	b.op(client, OpAcquire, token, 0, "", OK).op(client, OpFence, token, 0, "", OK)
	b.op(client, OpRead, token, read, "", OK).op(client, OpWrite, token, read+1, id, OK)
	b.logged(token, read+1, id)
	return b.op(client, OpRelease, token, 0, "", OK)
}

func kinds(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Kind)
	}
	return out
}

func TestSafetyCheckerHandMade(t *testing.T) {
	tests := []struct {
		name        string
		build       func() History
		kinds       []string
		lost        int
		overlapping int
		linear      bool
	}{
		{
			name: "clean handoffs",
			build: func() History {
				b := &hist{h: History{Fenced: true}}
				b.holder(1, 10, 0, "a").holder(2, 20, 1, "b").holder(1, 30, 2, "c")
				return b.h
			},
			linear: true,
		},
		{
			name: "paused holder refused by fencing",
			build: func() History {
				b := &hist{h: History{Fenced: true, Rejected: 1}}
				b.op(1, OpAcquire, 10, 0, "", OK).op(1, OpFence, 10, 0, "", OK).op(1, OpRead, 10, 0, "", OK)
				// client 1 pauses here; its lease expires and client 2 takes over
				b.holder(2, 20, 0, "b")
				b.op(1, OpWrite, 10, 1, "a", Stale)
				return b.h
			},
			overlapping: 1, linear: true,
		},
		{
			name: "paused holder admitted without fencing: lost update",
			build: func() History {
				b := &hist{h: History{Fenced: false}}
				b.op(1, OpAcquire, 10, 0, "", OK).op(1, OpFence, 10, 0, "", OK).op(1, OpRead, 10, 0, "", OK)
				b.holder(2, 20, 0, "b")
				b.op(1, OpWrite, 10, 1, "a", OK).logged(10, 1, "a")
				b.holder(3, 30, 1, "c")
				return b.h
			},
			kinds: []string{KindStaleAdmitted, KindLostUpdate}, lost: 1, overlapping: 1, linear: true,
		},
		{
			name: "stale write admitted after a fence, before any newer write",
			build: func() History {
				b := &hist{h: History{Fenced: true}}
				b.holder(1, 10, 0, "a")
				b.op(2, OpAcquire, 20, 0, "", OK).op(2, OpFence, 20, 0, "", OK)
				b.op(1, OpWrite, 10, 7, "late", OK).logged(10, 7, "late")
				return b.h
			},
			kinds: []string{KindStaleAdmitted, KindLostUpdate, KindNotLinearizable}, lost: 0, overlapping: 1, linear: false,
		},
		{
			name: "read of a value nobody wrote is not linearizable",
			build: func() History {
				b := &hist{h: History{Fenced: true}}
				b.holder(1, 10, 0, "a")
				b.op(2, OpAcquire, 20, 0, "", OK).op(2, OpRead, 20, 5, "", OK)
				return b.h
			},
			kinds: []string{KindNotLinearizable}, linear: false,
		},
		{
			name: "acknowledged write missing from the log, and a phantom",
			build: func() History {
				b := &hist{h: History{Fenced: true}}
				b.op(1, OpAcquire, 10, 0, "", OK).op(1, OpWrite, 10, 1, "a", OK)
				b.logged(10, 1, "ghost")
				return b.h
			},
			// No read observes the difference, so the register alone is linearizable.
			kinds: []string{KindUnexplained, KindAckedMissing}, linear: true,
		},
		{
			name: "unknown write resolved by the log",
			build: func() History {
				b := &hist{h: History{Fenced: true}}
				b.op(1, OpAcquire, 10, 0, "", OK).op(1, OpRead, 10, 0, "", OK)
				b.op(1, OpWrite, 10, 1, "a", Unknown).logged(10, 1, "a")
				b.op(1, OpWrite, 10, 2, "lostinflight", Unknown) // never landed
				b.op(2, OpAcquire, 20, 0, "", OK).op(2, OpFence, 20, 0, "", Unknown).op(2, OpRead, 20, 1, "", OK)
				return b.h
			},
			linear: true,
		},
		{
			name: "a fenced resource that accepts a lower token is not linearizable",
			build: func() History {
				b := &hist{h: History{Fenced: true}}
				b.op(2, OpFence, 20, 0, "", OK)
				b.op(1, OpWrite, 10, 1, "a", OK).logged(10, 1, "a")
				return b.h
			},
			kinds: []string{KindStaleAdmitted, KindNotLinearizable}, overlapping: 1, linear: false,
		},
		{
			name: "the window before the new holder's first write: fenced, no fence first",
			build: func() History {
				b := &hist{h: History{Fenced: true}}
				b.op(1, OpAcquire, 10, 0, "", OK).op(1, OpRead, 10, 0, "", OK)
				b.op(2, OpAcquire, 20, 0, "", OK).op(2, OpRead, 20, 0, "", OK)
				b.op(1, OpWrite, 10, 1, "a", OK).logged(10, 1, "a") // floor was 0: admitted
				b.op(2, OpWrite, 20, 1, "b", OK).logged(20, 1, "b")
				return b.h
			},
			kinds: []string{KindLostUpdate}, lost: 1, overlapping: 1, linear: true,
		},
		{
			name: "a refusal proves an overlap the clock cannot show",
			build: func() History {
				b := &hist{h: History{Fenced: true, Rejected: 1}}
				b.holder(2, 20, 0, "b")
				// A process client: its ops span its whole life, which began first.
				b.h.Ops = append(b.h.Ops, Op{Client: 6, Kind: OpWrite, Token: 10, Value: 1, ID: "x-1", Call: 1, Return: b.now + 100, Outcome: Stale})
				return b.h
			},
			overlapping: 1, linear: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.build()
			r := Check(h)
			require.Equal(t, tc.kinds, kinds(r.Violations), "%+v", r.Violations)
			require.Equal(t, tc.lost, r.LostUpdates, "lost updates")
			require.Equal(t, tc.overlapping, r.OverlappingHolders, "overlapping holders")
			require.Equal(t, tc.linear, r.Linearizable, "linearizable")
			require.Equal(t, h.Rejected, r.StaleRejected)
		})
	}
}

func TestMaxHolders(t *testing.T) {
	// Token 2 read value 1 (seq 1), froze while token 3 wrote seq 2 and 3,
	// then wrote value 2 at seq 4: it was live across token 3's writes.
	lost := []Write{
		{Seq: 1, Token: 1, Value: 1}, {Seq: 2, Token: 3, Value: 2}, {Seq: 3, Token: 3, Value: 3}, {Seq: 4, Token: 2, Value: 2},
	}
	require.Equal(t, 2, maxHolders(lost))
	// Holders one after the other, each building on the last write.
	seq := []Write{{Seq: 1, Token: 1, Value: 1}, {Seq: 2, Token: 1, Value: 2}, {Seq: 3, Token: 4, Value: 3}, {Seq: 4, Token: 5, Value: 4}}
	require.Equal(t, 1, maxHolders(seq))
	// Two slots interleaved: one holder per slot.
	slots := []Write{{Seq: 1, Token: 1, Value: 1}, {Seq: 2, Token: 2, Value: 1, Slot: 1}, {Seq: 3, Token: 1, Value: 2}, {Seq: 4, Token: 2, Value: 2, Slot: 1}}
	require.Equal(t, 2, maxHolders(slots))
	r := Check(History{Fenced: true, Limit: 1, Writes: slots, Ops: []Op{
		{Kind: OpWrite, ID: "", Outcome: Unknown},
	}})
	require.Equal(t, 2, r.MaxHolders)
	require.Equal(t, 2, r.Slots)
	require.Contains(t, kinds(r.Violations), KindTooManyHolders)
}

// With If-Match, a late holder whose write built on the latest version is
// admitted below a larger token: not a violation there, and one where
// tokens are checked (unfenced: a finding).
func TestCheckIfMatch(t *testing.T) {
	b := &hist{}
	b.holder(1, 5, 0, "a")
	b.op(2, OpAcquire, 7, 0, "", OK)
	b.op(2, OpRead, 7, 1, "", OK).op(2, OpWrite, 7, 2, "b", OK).logged(7, 2, "b")
	// Holder 5 was frozen; its write built on version 2 and was admitted.
	b.op(1, OpRead, 5, 2, "", OK).op(1, OpWrite, 5, 3, "c", OK).logged(5, 3, "c")
	// Another late write whose version had moved on: refused by If-Match.
	b.op(3, OpAcquire, 6, 0, "", OK).op(3, OpWrite, 6, 2, "d", Conflict)
	b.h.IfMatch = true
	r := Check(b.h)
	require.Empty(t, r.Violations)
	require.True(t, r.Linearizable)
	require.Zero(t, r.LostUpdates)
	require.Equal(t, 1, r.Conflicts)
	require.GreaterOrEqual(t, r.OverlappingHolders, 2, "the late write and the refused one both overlapped")

	b.h.IfMatch = false
	require.Contains(t, kinds(Check(b.h).Violations), KindStaleAdmitted)
}

// Readers of a read-write lock are counted apart and shared.
func TestCheckReaders(t *testing.T) {
	h := History{Ops: []Op{
		{Client: 2, Kind: OpAcquire, Token: 10, Reader: true, Call: 0, Return: 10, Outcome: OK},
		{Client: 4, Kind: OpAcquire, Token: 11, Reader: true, Call: 5, Return: 20, Outcome: OK},
		{Client: 2, Kind: OpRead, Token: 10, Reader: true, Call: 21, Return: 25, Outcome: OK},
		{Client: 2, Kind: OpRelease, Token: 10, Reader: true, Call: 30, Return: 35, Outcome: OK},
		{Client: 4, Kind: OpRelease, Token: 11, Reader: true, Call: 40, Return: 45, Outcome: OK},
		{Client: 1, Kind: OpAcquire, Token: 12, Call: 41, Return: 50, Outcome: OK},
		{Client: 3, Kind: OpAcquire, Token: 13, Reader: true, Call: 60, Return: 0, Outcome: Fail},
	}}
	r := Check(h)
	require.Equal(t, 2, r.ReaderAcquisitions)
	require.Equal(t, 2, r.MaxReaders)
	require.Equal(t, 1, r.Acquisitions, "writers only")
	require.Zero(t, r.OverlappingHolders, "a reader's larger token does not make a writer overlap")
	require.Empty(t, r.Violations)
}
