package report

import (
	"sync"
	"time"
)

// Recorder builds a Timeline while a scenario runs, from events stamped by
// its clock. Safe for concurrent use. The zero value is not usable; use
// NewRecorder.
type Recorder struct {
	mu     sync.Mutex
	now    func() time.Time
	start  time.Time
	lanes  []string
	open   map[string]*Span // the current span of each lane
	spans  map[string][]Span
	faults map[string]time.Time
	tl     Timeline
	steps  []Step
}

// NewRecorder starts a timeline at now(). A nil now uses time.Now.
func NewRecorder(now func() time.Time) *Recorder {
	if now == nil {
		now = time.Now
	}
	return &Recorder{
		now:    now,
		start:  now(),
		open:   map[string]*Span{},
		spans:  map[string][]Span{},
		faults: map[string]time.Time{},
	}
}

// Since returns the offset of t from the start of the timeline.
func (r *Recorder) Since(t time.Time) Millis {
	d := t.Sub(r.start)
	if d < 0 {
		d = 0
	}
	return Millis(d)
}

// Now returns the current offset.
func (r *Recorder) Now() Millis { return r.Since(r.now()) }

// State puts lane in state from now on. Repeating the current state is a
// no-op; lanes appear in the order they are first named.
func (r *Recorder) State(lane, state string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := r.Since(r.now())
	cur := r.open[lane]
	if cur == nil {
		r.lanes = append(r.lanes, lane)
	} else {
		if cur.State == state {
			return
		}
		cur.To = at
		if cur.To > cur.From {
			r.spans[lane] = append(r.spans[lane], *cur)
		}
	}
	r.open[lane] = &Span{From: at, State: state}
}

// FaultStart opens a fault window named label; FaultEnd closes it.
func (r *Recorder) FaultStart(label string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.faults[label]; !ok {
		r.faults[label] = r.now()
	}
}

// FaultEnd closes the fault window named label; unknown labels are ignored.
func (r *Recorder) FaultEnd(label string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.faults[label]; ok {
		delete(r.faults, label)
		r.tl.Faults = append(r.tl.Faults, Window{From: r.Since(t), To: r.Since(r.now()), Label: label})
	}
}

// Op records an operation that was called at call and returned at ret.
func (r *Recorder) Op(client, desc string, call, ret time.Time, outcome string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tl.Ops = append(r.tl.Ops, Op{Client: client, Desc: desc, Call: r.Since(call), Return: r.Since(ret), Outcome: outcome})
}

// Mark records a named instant now, on lane ("" for the whole timeline).
func (r *Recorder) Mark(lane, label string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tl.Marks = append(r.tl.Marks, Mark{At: r.Since(r.now()), Lane: lane, Label: label})
}

// Step records a line of the story now: actor did event (see Step).
func (r *Recorder) Step(actor, event, text string, token uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, Step{At: r.Since(r.now()), Actor: actor, Event: event, Text: text, Token: token})
}

// Heading records the start of a chapter of the story.
func (r *Recorder) Heading(text string) { r.Step("-", EventHeading, text, 0) }

// Explain records a paragraph of explanation.
func (r *Recorder) Explain(text string) { r.Step("-", EventExplain, text, 0) }

// Steps returns the story recorded so far.
func (r *Recorder) Steps() []Step {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Step(nil), r.steps...)
}

// Timeline closes every open span and fault window at now and returns the
// timeline. The recorder can go on recording; a later call returns more.
func (r *Recorder) Timeline() *Timeline {
	r.mu.Lock()
	defer r.mu.Unlock()
	end := r.Since(r.now())
	tl := Timeline{End: end}
	for _, name := range r.lanes {
		spans := append([]Span(nil), r.spans[name]...)
		if cur := r.open[name]; cur != nil && end > cur.From {
			s := *cur
			s.To = end
			spans = append(spans, s)
		}
		tl.Lanes = append(tl.Lanes, Lane{Name: name, Spans: spans})
	}
	tl.Faults = append(tl.Faults, r.tl.Faults...)
	for label, t := range r.faults {
		tl.Faults = append(tl.Faults, Window{From: r.Since(t), To: end, Label: label})
	}
	sortWindows(tl.Faults)
	tl.Ops = append(tl.Ops, r.tl.Ops...)
	tl.Marks = append(tl.Marks, r.tl.Marks...)
	return &tl
}

func sortWindows(ws []Window) {
	for i := 1; i < len(ws); i++ {
		for j := i; j > 0 && (ws[j].From < ws[j-1].From || ws[j].From == ws[j-1].From && ws[j].Label < ws[j-1].Label); j-- {
			ws[j], ws[j-1] = ws[j-1], ws[j]
		}
	}
}
