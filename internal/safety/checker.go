package safety

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// Violation kinds.
const (
	// KindStaleAdmitted: the resource accepted a write whose token was below
	// a token it had already admitted (a later holder's write or fence).
	KindStaleAdmitted = "stale-admitted"
	// KindLostUpdate: an accepted write did not build on the previous one
	// (its value is not the previous value + 1), so increments were lost.
	KindLostUpdate = "lost-update"
	// KindAckedMissing: a client was told its write was accepted but the
	// resource's log does not have it.
	KindAckedMissing = "acked-missing"
	// KindUnexplained: the resource's log has a write no client issued.
	KindUnexplained = "unexplained-write"
	// KindTooManyHolders: with fencing, more holders were live at once in
	// the resource's log than the lock admits.
	KindTooManyHolders = "too-many-holders"
	// KindNotLinearizable: the history of reads, writes and fences is not
	// linearizable against the register-with-floor model.
	KindNotLinearizable = "not-linearizable"
)

// Violation is one thing the checker found wrong.
type Violation struct {
	Kind   string `json:"kind"`
	Seq    uint64 `json:"seq,omitempty"`
	Token  uint64 `json:"token,omitempty"`
	Detail string `json:"detail"`
}

// Result is what Check found in a history.
type Result struct {
	Ops          int `json:"ops"`
	Acquisitions int `json:"acquisitions"`
	Writes       int `json:"writes"` // accepted by the resource
	FinalValue   int `json:"final_value"`
	// StaleRejected is the resource's count of stale requests it refused.
	StaleRejected int `json:"stale_rejected"`
	// Conflicts counts the writes refused by If-Match (ModeIfMatch).
	Conflicts int `json:"conflicts,omitempty"`
	// OverlappingHolders counts holders (tokens) that sent a write after a
	// holder with a larger token had been granted the lock: the lock alone
	// did not exclude them. With fencing these writes are refused or
	// harmless; without it they are how updates get lost.
	OverlappingHolders int `json:"overlapping_holders"`
	// LostUpdates is accepted writes minus the final counter value: the
	// increments that were acknowledged and then overwritten.
	LostUpdates  int         `json:"lost_updates"`
	Linearizable bool        `json:"linearizable"`
	Violations   []Violation `json:"violations"`
	// Slots is the number of counters (semaphore slots) written.
	Slots int `json:"slots"`
	// MaxHolders is the largest number of holders live at once in the
	// resource's log: a holder (token of a slot) is live from its first to
	// its last accepted write, by log sequence. With fencing it is at most
	// the number of slots; a stale holder's write between a successor's
	// writes makes them overlap.
	MaxHolders int `json:"max_holders"`
	// ReaderAcquisitions and MaxReaders: read holdings of a read-write
	// lock, and the most held at once by the clients' clock (readers share).
	ReaderAcquisitions int `json:"reader_acquisitions,omitempty"`
	MaxReaders         int `json:"max_readers,omitempty"`
}

// CheckTimeout bounds the linearizability search.
const CheckTimeout = 60 * time.Second

// Check examines h, each slot's counter on its own. It is pure: it reads
// only h.
func Check(h History) Result {
	slots := map[int]*History{}
	sub := func(slot int) *History {
		if s, ok := slots[slot]; ok {
			return s
		}
		s := &History{Fenced: h.Fenced, IfMatch: h.IfMatch, End: h.End}
		slots[slot] = s
		return s
	}
	sub(0)
	for _, op := range h.Ops {
		s := sub(op.Slot)
		s.Ops = append(s.Ops, op)
	}
	for _, w := range h.Writes {
		s := sub(w.Slot)
		s.Writes = append(s.Writes, w)
	}
	keys := make([]int, 0, len(slots))
	for k := range slots {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	r := Result{StaleRejected: h.Rejected, Linearizable: true, Violations: []Violation{}}
	for _, op := range h.Ops {
		if op.Kind == OpWrite && op.Outcome == Conflict {
			r.Conflicts++
		}
	}
	for _, k := range keys {
		s := checkSlot(*slots[k])
		r.Ops += s.Ops
		r.Acquisitions += s.Acquisitions
		r.Writes += s.Writes
		r.FinalValue += s.FinalValue
		r.OverlappingHolders += s.OverlappingHolders
		r.LostUpdates += s.LostUpdates
		r.Linearizable = r.Linearizable && s.Linearizable
		r.Violations = append(r.Violations, s.Violations...)
		if len(slots[k].Writes) > 0 {
			r.Slots++
		}
	}
	r.MaxHolders = maxHolders(h.Writes)
	if h.Fenced && h.Limit > 0 && r.MaxHolders > h.Limit {
		r.Violations = append(r.Violations, Violation{Kind: KindTooManyHolders,
			Detail: fmt.Sprintf("%d holders were live at once in the resource's log; the lock admits %d", r.MaxHolders, h.Limit)})
	}
	r.ReaderAcquisitions, r.MaxReaders = readers(h.Ops)
	return r
}

// maxHolders is the largest number of holders (slot, token) live at once
// in the resource's log. A holder is live from just after the write its
// read-modify-write built on (the latest earlier write of its slot whose
// value is one less) to its last accepted write, by log sequence: a
// holder frozen between its read and its write stays live across the
// writes its successors made meanwhile.
func maxHolders(writes []Write) int {
	type holder struct {
		slot  int
		token uint64
	}
	sorted := slices.Clone(writes)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Seq < sorted[j].Seq })
	last := map[int]map[int]uint64{} // slot → value → seq of its latest write
	span := map[holder][2]uint64{}
	for _, w := range sorted {
		start := w.Seq
		if base, ok := last[w.Slot][w.Value-1]; ok {
			start = base + 1
		}
		k := holder{w.Slot, w.Token}
		s, ok := span[k]
		if !ok {
			s = [2]uint64{start, w.Seq}
		}
		s[0], s[1] = min(s[0], start), max(s[1], w.Seq)
		span[k] = s
		if last[w.Slot] == nil {
			last[w.Slot] = map[int]uint64{}
		}
		last[w.Slot][w.Value] = w.Seq
	}
	return maxConcurrent(span)
}

// maxConcurrent is the most closed intervals that share a point.
func maxConcurrent[K comparable, T int64 | uint64](spans map[K][2]T) int {
	type edge struct {
		at    T
		delta int
	}
	var edges []edge
	for _, s := range spans {
		edges = append(edges, edge{s[0], 1}, edge{s[1], -1})
	}
	// Starts before ends at one point: closed intervals that touch overlap.
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta > edges[j].delta
	})
	n, top := 0, 0
	for _, e := range edges {
		n += e.delta
		top = max(top, n)
	}
	return top
}

// readers counts the granted read holdings and the most of them held at
// once, from grant (acquire return) to the call of their release.
func readers(ops []Op) (acquisitions, most int) {
	type holding struct {
		client int
		token  uint64
	}
	span := map[holding][2]int64{}
	for _, op := range ops {
		if !op.Reader || op.Outcome != OK && op.Kind == OpAcquire {
			continue
		}
		k := holding{op.Client, op.Token}
		switch op.Kind {
		case OpAcquire:
			acquisitions++
			s := span[k]
			s[0] = op.Return
			if s[1] == 0 {
				s[1] = op.Return
			}
			span[k] = s
		case OpRelease:
			s := span[k]
			s[1] = max(s[1], op.Call)
			span[k] = s
		}
	}
	return acquisitions, maxConcurrent(span)
}

// checkSlot examines the history of one counter.
func checkSlot(h History) Result {
	r := Result{Ops: len(h.Ops), Writes: len(h.Writes), Violations: []Violation{}}
	byID := map[string]Op{}
	for _, op := range h.Ops {
		switch op.Kind {
		case OpAcquire:
			if op.Outcome == OK && !op.Reader {
				r.Acquisitions++
			}
		case OpWrite:
			byID[op.ID] = op
		}
	}
	writes := slices.Clone(h.Writes)
	sort.Slice(writes, func(i, j int) bool { return writes[i].Seq < writes[j].Seq })
	logged := map[string]bool{}
	for _, w := range writes {
		logged[w.ID] = true
		if _, ok := byID[w.ID]; !ok {
			r.Violations = append(r.Violations, Violation{Kind: KindUnexplained, Seq: w.Seq, Token: w.Token,
				Detail: fmt.Sprintf("write %q (value %d) is in the log but no client issued it", w.ID, w.Value)})
		}
	}
	for _, op := range h.Ops {
		if op.Kind == OpWrite && op.Outcome == OK && !logged[op.ID] {
			r.Violations = append(r.Violations, Violation{Kind: KindAckedMissing, Token: op.Token,
				Detail: fmt.Sprintf("client %d was told write %q was accepted; the log does not have it", op.Client, op.ID)})
		}
	}
	if !h.IfMatch {
		// With If-Match a write is admitted on its version, whatever its
		// token: a late holder's write that built on the latest version is
		// no lost update, and not the resource's claim to refuse.
		r.Violations = append(r.Violations, staleAdmissions(h, writes, byID)...)
	}
	lost := lostUpdates(writes)
	r.Violations = append(r.Violations, lost...)
	if len(writes) > 0 {
		r.FinalValue = writes[len(writes)-1].Value
	}
	r.LostUpdates = max(0, len(writes)-r.FinalValue)
	r.OverlappingHolders = overlappingHolders(h.Ops, r.Violations)
	r.Linearizable = linearizable(h, logged)
	if !r.Linearizable {
		r.Violations = append(r.Violations, Violation{Kind: KindNotLinearizable,
			Detail: "no linearization of the reads, writes and fences matches a register with a fencing floor"})
	}
	return r
}

// staleAdmissions finds accepted writes below a token admitted before
// them: an earlier accepted write (by log order) or a fence that had
// returned before the write was sent.
func staleAdmissions(h History, writes []Write, byID map[string]Op) []Violation {
	var out []Violation
	var top uint64
	var topSeq uint64
	for _, w := range writes {
		if w.Token < top {
			out = append(out, Violation{Kind: KindStaleAdmitted, Seq: w.Seq, Token: w.Token,
				Detail: fmt.Sprintf("write seq %d with token %d accepted after seq %d with token %d", w.Seq, w.Token, topSeq, top)})
		} else {
			top, topSeq = w.Token, w.Seq
		}
	}
	var fences []Op
	for _, op := range h.Ops {
		if op.Kind == OpFence && op.Outcome == OK {
			fences = append(fences, op)
		}
	}
	flagged := map[uint64]bool{}
	for _, v := range out {
		flagged[v.Seq] = true
	}
	for _, w := range writes {
		op, ok := byID[w.ID]
		if !ok || flagged[w.Seq] {
			continue
		}
		for _, f := range fences {
			if f.Token > w.Token && f.Return < op.Call {
				out = append(out, Violation{Kind: KindStaleAdmitted, Seq: w.Seq, Token: w.Token,
					Detail: fmt.Sprintf("write seq %d with token %d accepted although a fence with token %d had returned before it was sent", w.Seq, w.Token, f.Token)})
				break
			}
		}
	}
	return out
}

// lostUpdates reports each accepted write that does not build on the one
// before it (value ≠ previous + 1).
func lostUpdates(writes []Write) []Violation {
	var out []Violation
	prev := 0
	for _, w := range writes {
		if w.Value != prev+1 {
			out = append(out, Violation{Kind: KindLostUpdate, Seq: w.Seq, Token: w.Token,
				Detail: fmt.Sprintf("write seq %d (token %d) set the counter to %d over %d", w.Seq, w.Token, w.Value, prev)})
		}
		prev = w.Value
	}
	return out
}

// overlappingHolders counts the tokens that sent a write (of any outcome
// but Fail) after a larger token had been granted, by the clients' clock;
// and those whose write or fence the resource refused as stale (or, with
// If-Match, because another holder wrote since their read), or
// admitted below a larger token (the violations found so far): either
// proves that a later holder had been granted while they still acted.
func overlappingHolders(ops []Op, found []Violation) int {
	type grant struct {
		at    int64
		token uint64
	}
	var grants []grant
	for _, op := range ops {
		if op.Kind == OpAcquire && op.Outcome == OK && !op.Reader {
			grants = append(grants, grant{op.Return, op.Token})
		}
	}
	sort.Slice(grants, func(i, j int) bool { return grants[i].at < grants[j].at })
	// prefix[i] is the largest token granted by grants[i].at.
	prefix := make([]uint64, len(grants))
	var top uint64
	for i, g := range grants {
		top = max(top, g.token)
		prefix[i] = top
	}
	overlapped := map[uint64]bool{}
	for _, v := range found {
		if v.Kind == KindStaleAdmitted {
			overlapped[v.Token] = true
		}
	}
	for _, op := range ops {
		if (op.Kind == OpWrite || op.Kind == OpFence) && (op.Outcome == Stale || op.Outcome == Conflict) {
			overlapped[op.Token] = true
		}
		if op.Kind != OpWrite || op.Outcome == Fail {
			continue
		}
		// Grants strictly before the write was sent.
		i := sort.Search(len(grants), func(i int) bool { return grants[i].at >= op.Call })
		if i > 0 && prefix[i-1] > op.Token {
			overlapped[op.Token] = true
		}
	}
	return len(overlapped)
}

// porcupineOps turns the history into porcupine operations. Writes whose
// outcome is unknown are resolved by the log (present: accepted, returning
// by the end of the history; absent: no effect, left out); fences whose
// outcome is unknown stay unknown.
func porcupineOps(h History, logged map[string]bool) []porcupine.Operation {
	end := h.End
	for _, op := range h.Ops {
		end = max(end, op.Call, op.Return)
	}
	end++
	var ops []porcupine.Operation
	for _, op := range h.Ops {
		in := registerInput{kind: op.Kind, token: op.Token, value: op.Value}
		out := registerOutput{}
		ret := op.Return
		switch op.Kind {
		case OpRead:
			if op.Outcome != OK {
				continue
			}
			out = registerOutput{accepted: true, value: op.Value}
		case OpWrite:
			switch {
			case op.Outcome == OK:
				out.accepted = true
			case op.Outcome == Stale:
			case op.Outcome == Unknown && logged[op.ID]:
				out.accepted, ret = true, end
			default:
				continue
			}
		case OpFence:
			switch op.Outcome {
			case OK:
				out.accepted = true
			case Stale:
			case Unknown:
				out.unknown, ret = true, end
			default:
				continue
			}
		default:
			continue
		}
		if ret < op.Call {
			ret = end
		}
		ops = append(ops, porcupine.Operation{ClientId: op.Client, Input: in, Output: out, Call: op.Call, Return: ret})
	}
	return ops
}

func linearizable(h History, logged map[string]bool) bool {
	res := porcupine.CheckOperationsTimeout(registerModel(h.Fenced), porcupineOps(h, logged), CheckTimeout)
	return res != porcupine.Illegal
}
