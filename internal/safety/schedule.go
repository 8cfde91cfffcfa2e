package safety

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// ErrBadSchedule is returned for a schedule file that cannot be replayed.
var ErrBadSchedule = errors.New("safety: bad schedule")

// NotReplayed says what a replay of a recorded schedule does not repeat.
// A replay applies the same faults at the same offsets from the start,
// with the same hold and quiet times.
const NotReplayed = "etcd's elections and lease timers, the clients' keepalives, and the OS and Go schedulers " +
	"are not replayed: which member leads when a step fires (isolate-leader isolates whoever leads then) " +
	"and which client holds the lock (freeze-client freezes the holder of that moment) can differ"

// ScheduleFile is a recorded fault schedule, as --schedule reads it.
type ScheduleFile struct {
	Check       string `json:"check"`
	Seed        int64  `json:"seed"`
	Steps       []Step `json:"steps"`
	NotReplayed string `json:"not_replayed"`
}

// stepJSON is Step with durations as strings ("1.5s"), for files people read.
type stepJSON struct {
	Kind   FaultKind `json:"kind"`
	Member int       `json:"member,omitempty"`
	Client int       `json:"client,omitempty"`
	Hold   string    `json:"hold"`
	Quiet  string    `json:"quiet"`
	At     string    `json:"at,omitempty"`
}

// MarshalJSON writes the durations as Go duration strings.
func (s Step) MarshalJSON() ([]byte, error) {
	j := stepJSON{Kind: s.Kind, Member: s.Member, Client: s.Client, Hold: s.Hold.String(), Quiet: s.Quiet.String()}
	if s.At > 0 {
		j.At = s.At.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Step) UnmarshalJSON(b []byte) error {
	var j stepJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Step{Kind: j.Kind, Member: j.Member, Client: j.Client}
	for _, f := range []struct {
		in  string
		out *time.Duration
	}{{j.Hold, &s.Hold}, {j.Quiet, &s.Quiet}, {j.At, &s.At}} {
		if f.in == "" {
			continue
		}
		d, err := time.ParseDuration(f.in)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrBadSchedule, err)
		}
		*f.out = d
	}
	return nil
}

// ReadSchedule reads a schedule file and checks it (ValidateSchedule,
// without the client count, which the run checks).
func ReadSchedule(r io.Reader) (ScheduleFile, error) {
	var f ScheduleFile
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("%w: %v", ErrBadSchedule, err)
	}
	return f, ValidateSchedule(f.Steps, 0)
}

// WriteSchedule writes f as indented JSON, NotReplayed filled in.
func WriteSchedule(w io.Writer, f ScheduleFile) error {
	f.NotReplayed = NotReplayed
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ValidateSchedule checks steps: known kinds, positive holds, offsets that
// do not go back, members 1..3 and (when clients > 0) clients 1..clients.
func ValidateSchedule(steps []Step, clients int) error {
	var at time.Duration
	for i, s := range steps {
		switch {
		case !slices.Contains(knownFaults, s.Kind):
			return fmt.Errorf("%w: step %d: unknown fault %q", ErrBadSchedule, i+1, s.Kind)
		case s.Hold <= 0 || s.Quiet < 0 || s.At < 0:
			return fmt.Errorf("%w: step %d: hold must be positive, quiet and at not negative", ErrBadSchedule, i+1)
		case s.At > 0 && s.At < at:
			return fmt.Errorf("%w: step %d: at %s is before the previous step's %s", ErrBadSchedule, i+1, s.At, at)
		case s.Member < 0 || s.Member > 3:
			return fmt.Errorf("%w: step %d: member %d (want 1..3)", ErrBadSchedule, i+1, s.Member)
		case s.Client < 0 || (clients > 0 && s.Client > clients):
			return fmt.Errorf("%w: step %d: client %d of %d", ErrBadSchedule, i+1, s.Client, clients)
		}
		if s.At > 0 {
			at = s.At
		}
	}
	return nil
}

// Compact re-times steps back to back: the first at 1s (when the
// nemesis starts on a fresh schedule), each next one when the previous
// one's hold and quiet time are over. A shrunk schedule runs in the time
// its own faults need, not that of the faults taken out.
func Compact(steps []Step) []Step {
	out := make([]Step, len(steps))
	at := time.Second
	for i, s := range steps {
		s.At = at
		out[i] = s
		at += s.Hold + s.Quiet
	}
	return out
}

// End is when the last step's quiet time is over, if the steps run as
// timed (At) or back to back from 1s.
func End(steps []Step) time.Duration {
	at := time.Second
	for _, s := range steps {
		if s.At > at {
			at = s.At
		}
		at += s.Hold + s.Quiet
	}
	return at
}

// Effect is what one applied step of the schedule touched, and whether it
// mattered.
type Effect struct {
	// Step is the step's number in the schedule, from 1.
	Step int       `json:"step"`
	Kind FaultKind `json:"kind"`
	// AtS is when it was applied, in seconds from the start of the run.
	AtS float64 `json:"at_s"`
	// Target is what it touched ("member 2 (the leader)", "client 3");
	// empty when it touched nothing.
	Target string `json:"target,omitempty"`
	// Effective: a freeze whose holder was superseded and then wrote (its
	// late write accepted or rejected as stale); a cluster fault during
	// which at least one client operation failed or went unanswered; a
	// SIGSTOP of a process client holding the lock.
	Effective bool   `json:"effective"`
	What      string `json:"what"`
}

// freezeOrder asks a worker to freeze at its next freeze point.
type freezeOrder struct {
	hold time.Duration
	step int
}

// appliedStep is what the nemesis did for one step.
type appliedStep struct {
	step       Step
	start, end int64 // ns since the start of the run; end 0 while it holds
	target     string
	what       string // set by faults that know their effect (sigstop)
	effective  bool
	frozen     bool // a freeze reached its client's freeze point
	client     int
	token      uint64
	superseded bool // a later holder was granted while it was frozen
	late       *Op  // the frozen holder's write after the freeze
}

func (r *run) stepStarts(i int, s Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.applied) <= i {
		r.applied = append(r.applied, appliedStep{})
	}
	r.applied[i] = appliedStep{step: s, start: r.now()}
}

func (r *run) stepEnds(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i < len(r.applied) {
		r.applied[i].end = r.now()
	}
}

// with runs fn on applied step i, if it exists, under r.mu.
func (r *run) with(i int, fn func(a *appliedStep)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= 0 && i < len(r.applied) {
		fn(&r.applied[i])
	}
}

func (r *run) touched(i int, target string) { r.with(i, func(a *appliedStep) { a.target = target }) }

func (r *run) effective(i int, what string) {
	r.with(i, func(a *appliedStep) { a.effective, a.what = true, what })
}

func (r *run) frozeHolder(i, client int, token uint64) {
	r.with(i, func(a *appliedStep) { a.frozen, a.client, a.token = true, client, token })
}

func (r *run) thawed(i int, superseded bool) {
	r.with(i, func(a *appliedStep) { a.superseded = superseded })
}

func (r *run) lateWrite(i int, op Op) {
	r.with(i, func(a *appliedStep) {
		if a.late == nil {
			a.late = &op
		}
	})
}

// writtenBefore reports whether a holder with a later token than op's had
// a write to op's slot accepted before op was sent.
func (r *run) writtenBefore(op Op) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.ops {
		if o.Kind == OpWrite && o.Outcome == OK && o.Slot == op.Slot && o.Token > op.Token && o.Return < op.Call {
			return true
		}
	}
	return false
}

// ranSchedule is the schedule as it ran: the steps applied, each with the
// offset it was applied at.
func (r *run) ranSchedule() []Step {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Step
	for _, a := range r.applied {
		if a.step.Kind == "" {
			continue
		}
		s := a.step
		s.At = time.Duration(a.start)
		out = append(out, s)
	}
	return out
}

// effectsOf says, for each applied step, what it touched and whether it
// mattered, reading the history for the client operations that failed
// while a cluster fault held.
func (r *run) effectsOf(h History) []Effect {
	r.mu.Lock()
	applied := slices.Clone(r.applied)
	r.mu.Unlock()
	var out []Effect
	for i, a := range applied {
		if a.step.Kind == "" {
			continue
		}
		e := Effect{Step: i + 1, Kind: a.step.Kind, AtS: float64(a.start/int64(time.Millisecond)) / 1000, Target: a.target}
		switch {
		case a.step.Kind == FaultFreezeClient:
			e.Effective, e.What = freezeEffect(a)
		case a.what != "":
			e.Effective, e.What = a.effective, a.what
		case a.target == "":
			e.What = "did nothing (skipped: no leader then, no process client holding, or the member was down)"
		default:
			e.Effective, e.What = windowEffect(a, h)
		}
		out = append(out, e)
	}
	return out
}

func freezeEffect(a appliedStep) (bool, string) {
	if a.target == "" {
		return false, "did nothing (a freeze was already pending for that client)"
	}
	if !a.frozen {
		return false, fmt.Sprintf("queued a freeze of %s, which never reached its freeze point (it held nothing again before the run ended): froze an idle client", a.target)
	}
	what := fmt.Sprintf("froze client %d while it held token %d", a.client, a.token)
	if !a.superseded {
		return false, what + "; no later holder was granted while it was frozen"
	}
	what += "; a later holder was granted meanwhile"
	switch {
	case a.late == nil:
		return false, what + "; it wrote nothing afterwards"
	case a.late.Outcome == OK:
		return true, what + fmt.Sprintf("; its late write (value %d) reached the resource after the successor's grant", a.late.Value)
	case a.late.Outcome == Stale:
		return true, what + "; its late write was rejected as stale"
	case a.late.Outcome == Conflict:
		return true, what + "; its late write was refused by If-Match"
	}
	return false, what + fmt.Sprintf("; its late write ended %s", a.late.Outcome)
}

// windowEffect counts the client operations that overlapped the fault and
// failed or went unanswered.
func windowEffect(a appliedStep, h History) (bool, string) {
	end := a.end
	if end == 0 {
		end = h.End
	}
	kinds := map[string]int{}
	n := 0
	for _, op := range h.Ops {
		ret := op.Return
		if ret == 0 {
			ret = h.End
		}
		if op.Call > end || ret < a.start || (op.Outcome != Fail && op.Outcome != Unknown) {
			continue
		}
		n++
		kinds[string(op.Kind)]++
	}
	verb := map[FaultKind]string{FaultIsolateMember: "isolated", FaultIsolateLeader: "isolated", FaultCutClient: "cut", FaultStopMember: "stopped"}[a.step.Kind]
	what := fmt.Sprintf("%s %s for %s", verb, a.target, time.Duration(end-a.start).Round(100*time.Millisecond))
	if n == 0 {
		return false, what + ": no client operation failed during it"
	}
	var parts []string
	for _, k := range sortedKeys(kinds) {
		parts = append(parts, fmt.Sprintf("%d %s", kinds[k], k))
	}
	return true, what + fmt.Sprintf(": %d client operations failed or went unanswered during it (%s)", n, strings.Join(parts, ", "))
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
