package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/coordkit/coordkit/chart"
)

// Report is what one scenario run observed. Its JSON encoding is the stable
// contract of `coordctl scenario run -w json`:
//
//	{"name","passed","seed","scale","elapsed_ms","claims":[{"id","kind","claim","expected","observed","holds"}],
//	 "metrics":{name:value,...},"tables":[...],"timeline":{...},"charts":[...],"notes":[...]}
type Report struct {
	Name    string  `json:"name"`
	Summary string  `json:"summary,omitempty"`
	Passed  bool    `json:"passed"`
	Seed    int64   `json:"seed"`
	Scale   string  `json:"scale,omitempty"`
	Elapsed Millis  `json:"elapsed_ms"`
	Claims  []Claim `json:"claims"`
	Metrics Metrics `json:"metrics"`
	Tables  []Table `json:"tables,omitempty"`
	// Timeline is the picture of the run: nodes' roles over time, fault
	// windows and client operations. Nil when the scenario has none.
	Timeline *Timeline     `json:"timeline,omitempty"`
	Charts   []chart.Chart `json:"charts,omitempty"`
	Notes    []string      `json:"notes,omitempty"`
	// Steps tell the run as a story, in the order things happened; a
	// scenario that has a story to tell records them (coordctl demo
	// narrates them). Nil otherwise.
	Steps []Step `json:"steps,omitempty"`
	// Error says why the experiment could not be carried out; such a
	// report has no verdicts and does not pass.
	Error string `json:"error,omitempty"`
	// Skipped says why the scenario did not run: a server it needs was not
	// given. Such a report has no verdicts, does not pass, and is not a
	// failure.
	Skipped string `json:"skipped,omitempty"`
}

// Claim is one prediction of theory and what the run saw. ID and Kind
// ("safety" or "timing") are set for the claims of a registered scenario.
type Claim struct {
	ID       string `json:"id,omitempty"`
	Kind     string `json:"kind,omitempty"`
	Claim    string `json:"claim"`
	Expected string `json:"expected"`
	Observed string `json:"observed"`
	Holds    bool   `json:"holds"`
}

// Events of a Step that are not an actor's action.
const (
	// EventHeading starts a chapter of the story.
	EventHeading = "heading"
	// EventExplain is a paragraph of explanation.
	EventExplain = "explain"
)

// Step is one line of a run's story: an actor (a holder, etcd, a resource)
// did something (Event: "acquired", "write", "rejected", ...) at At. Actor
// is "-" for EventHeading and EventExplain. Token is the fencing token the
// step carried, 0 if none.
type Step struct {
	At    Millis `json:"at_ms"`
	Actor string `json:"actor"`
	Event string `json:"event"`
	Text  string `json:"text"`
	Token uint64 `json:"token,omitempty"`
}

// Metric is one measured number. Name should say the unit when Unit is
// empty in JSON consumers' eyes, e.g. "write_p50_ms".
type Metric struct {
	Name  string
	Value float64
	Unit  string
}

// Metrics keeps metrics in the order they were recorded. It encodes as a
// JSON object {name: value}.
type Metrics []Metric

// MarshalJSON encodes the metrics as one object, keys in recorded order.
func (m Metrics) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, x := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(x.Name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(x.Value)
		if err != nil {
			return nil, fmt.Errorf("metric %s: %w", x.Name, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON decodes an object {name: value}; the order becomes
// alphabetical and units are lost.
func (m *Metrics) UnmarshalJSON(b []byte) error {
	var raw map[string]float64
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(Metrics, 0, len(raw))
	for k, v := range raw {
		out = append(out, Metric{Name: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	*m = out
	return nil
}

// Get returns the value of the named metric.
func (m Metrics) Get(name string) (float64, bool) {
	for _, x := range m {
		if x.Name == name {
			return x.Value, true
		}
	}
	return 0, false
}

// Table is a titled grid of cells.
type Table struct {
	Title   string     `json:"title"`
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
}

// Millis is a duration that encodes as fractional milliseconds in JSON.
type Millis time.Duration

// D returns m as a time.Duration.
func (m Millis) D() time.Duration { return time.Duration(m) }

// MarshalJSON encodes m as milliseconds with microsecond precision.
func (m Millis) MarshalJSON() ([]byte, error) {
	ms := float64(time.Duration(m).Microseconds()) / 1000
	return json.Marshal(ms)
}

// UnmarshalJSON decodes milliseconds.
func (m *Millis) UnmarshalJSON(b []byte) error {
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return err
	}
	*m = Millis(time.Duration(ms * float64(time.Millisecond)))
	return nil
}

// States of a timeline lane.
const (
	StateLeader    = "leader"
	StateFollower  = "follower"
	StateCandidate = "candidate"
	StateDown      = "down"
	StatePaused    = "paused"
	// States of a lock holder's lane.
	StateHolder  = "holds lock"
	StateWaiting = "waiting"
	StateIdle    = "idle"
	// StateActive is a process that is up and working (a coordinator).
	StateActive = "active"
)

// UnitStep marks a Timeline whose offsets count steps, one per millisecond.
const UnitStep = "step"

// At formats an offset of the timeline: a duration, or "step N".
func (tl *Timeline) At(m Millis) string {
	if tl.Unit == UnitStep {
		return fmt.Sprintf("step %d", int64(m.D()/time.Millisecond))
	}
	return fmtDuration(m.D())
}

// Outcomes of a timeline operation. They are the strings of cluster.Outcome
// but stay their own: a report pictures etcd and process runs as well as
// the lab, and this package must not link the lab (package cluster) to
// draw them.
const (
	OutcomeOK      = "ok"
	OutcomeFail    = "fail"
	OutcomeUnknown = "unknown"
)

// Timeline is the picture of a run. Times are offsets from the start of the
// run; End is its length.
type Timeline struct {
	End Millis `json:"end_ms"`
	// Unit is "" for real time, or UnitStep for a logical timeline in
	// which each millisecond of the offsets is one step (a Lamport trace).
	Unit string `json:"unit,omitempty"`
	// Lanes are the nodes (or processes), each a sequence of spans in one
	// state (StateLeader, StateFollower, ...).
	Lanes []Lane `json:"lanes,omitempty"`
	// Faults are windows during which a fault was in force; shaded.
	Faults []Window `json:"faults,omitempty"`
	// Ops are client operations from call to return, with their outcome.
	Ops []Op `json:"ops,omitempty"`
	// Marks are instants worth naming (an election, a restart, a write).
	Marks []Mark `json:"marks,omitempty"`
}

// Lane is one node's states over time.
type Lane struct {
	Name  string `json:"name"`
	Spans []Span `json:"spans"`
}

// Span is a stretch of time in one state.
type Span struct {
	From  Millis `json:"from_ms"`
	To    Millis `json:"to_ms"`
	State string `json:"state"`
}

// Window is a fault in force from From to To.
type Window struct {
	From  Millis `json:"from_ms"`
	To    Millis `json:"to_ms"`
	Label string `json:"label"`
}

// Op is one client operation.
type Op struct {
	Client  string `json:"client"`
	Desc    string `json:"desc"` // e.g. "put x=3", "get x → 2 (stale)"
	Call    Millis `json:"call_ms"`
	Return  Millis `json:"return_ms"`
	Outcome string `json:"outcome"` // OutcomeOK, OutcomeFail, OutcomeUnknown
}

// Mark is a named instant, on a lane or (Lane "") on the whole timeline.
type Mark struct {
	At    Millis `json:"at_ms"`
	Lane  string `json:"lane,omitempty"`
	Label string `json:"label"`
}

// New returns an empty report for the named scenario.
func New(name, summary string) *Report {
	return &Report{Name: name, Summary: summary, Claims: []Claim{}, Metrics: Metrics{}}
}

// Check records a claim and returns holds, so callers can branch on it.
func (r *Report) Check(claim, expected, observed string, holds bool) bool {
	r.Claims = append(r.Claims, Claim{Claim: claim, Expected: expected, Observed: observed, Holds: holds})
	return holds
}

// CheckID records the verdict on the claim named id, whose text and kind
// the scenario declares (package scenarios fills them in), and returns
// holds.
func (r *Report) CheckID(id, expected, observed string, holds bool) bool {
	r.Claims = append(r.Claims, Claim{ID: id, Expected: expected, Observed: observed, Holds: holds})
	return holds
}

// Metric records a measured number.
func (r *Report) Metric(name string, value float64, unit string) {
	r.Metrics = append(r.Metrics, Metric{Name: name, Value: value, Unit: unit})
}

// AddTable appends a table.
func (r *Report) AddTable(t Table) { r.Tables = append(r.Tables, t) }

// AddChart appends a chart.
func (r *Report) AddChart(c chart.Chart) { r.Charts = append(r.Charts, c) }

// Note appends a line of commentary.
func (r *Report) Note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// Finish sets Passed: true when there is at least one claim and every
// claim holds.
func (r *Report) Finish() {
	r.Passed = len(r.Claims) > 0 && r.Error == ""
	for _, c := range r.Claims {
		if !c.Holds {
			r.Passed = false
		}
	}
}

// Failed returns the claims that do not hold.
func (r *Report) Failed() []Claim {
	var out []Claim
	for _, c := range r.Claims {
		if !c.Holds {
			out = append(out, c)
		}
	}
	return out
}
