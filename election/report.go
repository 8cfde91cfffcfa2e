package election

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/coordkit/coordkit/fencing"
)

// What coordctl elect prints, as values: the events of a campaign, the
// leader an observer sees, and the queue. Their JSON form is coordctl's
// contract; String is the readable line.

// Event is a campaign's event: "elected" once it leads, "handed-over" when
// it stepped down for a preferred candidate, "lost" if it stopped leading
// without being asked (Reason says why).
type Event struct {
	Event  string        `json:"event"`
	Name   string        `json:"name"`
	ID     string        `json:"id"`
	Token  fencing.Token `json:"token"`
	Reason string        `json:"reason,omitempty"`
}

func (ev Event) String() string {
	switch ev.Event {
	case "elected":
		return fmt.Sprintf("elected leader of %s as %s (token %d)", ev.Name, ev.ID, ev.Token)
	case "handed-over":
		return fmt.Sprintf("handed leadership of %s over as %s (token %d): %s", ev.Name, ev.ID, ev.Token, ev.Reason)
	}
	return fmt.Sprintf("lost leadership of %s as %s (token %d): %s", ev.Name, ev.ID, ev.Token, ev.Reason)
}

// Event is the leadership's event of kind kind ("elected", "handed-over",
// "lost") with reason.
func (l *Leadership) Event(kind, reason string) Event {
	return Event{Event: kind, Name: l.Name(), ID: l.Value(), Token: l.Token(), Reason: reason}
}

// LeaderEvent is one change an observer sees: event "leader", Leader nil
// when the election has no leader; event "unknown" (Leader nil) when no
// leader is known (etcd has not answered for longer than the last
// leader's lease, Reason).
type LeaderEvent struct {
	Event  string        `json:"event"`
	Leader *string       `json:"leader"`
	Token  fencing.Token `json:"token"`
	Reason string        `json:"reason,omitempty"`
}

// LeaderEventOf is the "leader" event of a WatchLeader (l nil: no leader).
func LeaderEventOf(l *Leader) LeaderEvent {
	out := LeaderEvent{Event: "leader"}
	if l != nil {
		out.Leader, out.Token = &l.Value, l.Token
	}
	return out
}

func (ev LeaderEvent) String() string {
	switch {
	case ev.Event == "unknown":
		return "no leader known: " + ev.Reason
	case ev.Leader == nil:
		return "no leader"
	}
	return fmt.Sprintf("leader %s (token %d)", *ev.Leader, ev.Token)
}

// CandidatesReport is the queue of an election, leader first
// ({"event":"candidates","name":N,"candidates":[...]}); String is one
// Candidate per line.
type CandidatesReport struct {
	Event      string      `json:"event"` // "candidates"
	Name       string      `json:"name"`
	Candidates []Candidate `json:"candidates"`
}

// Report is the election's queue as a CandidatesReport (Candidates' errors).
func (e *Election) Report(ctx context.Context) (CandidatesReport, error) {
	cs, err := e.Candidates(ctx)
	if err != nil {
		return CandidatesReport{}, err
	}
	if cs == nil {
		cs = []Candidate{}
	}
	return CandidatesReport{Event: "candidates", Name: e.Name(), Candidates: cs}, nil
}

func (o CandidatesReport) String() string {
	if len(o.Candidates) == 0 {
		return "no candidates in " + o.Name
	}
	lines := make([]string, len(o.Candidates))
	for i, c := range o.Candidates {
		lines[i] = c.String()
	}
	return strings.Join(lines, "\n")
}

// StepDownEvent is StepDown as an event: the "handed-over" event when the
// holder yielded to a preferred candidate (its Reason says whether the
// handover was made or it resigned), nil when it resigned plainly.
func (l *Leadership) StepDownEvent(ctx context.Context) (*Event, error) {
	yielded, herr, err := l.StepDown(ctx)
	if !yielded || err != nil {
		return nil, err
	}
	reason := "a preferred candidate joined: handed over to it"
	if herr != nil {
		reason = "a preferred candidate joined, but the handover failed (" + herr.Error() + "): resigned"
	}
	ev := l.Event("handed-over", reason)
	return &ev, nil
}

// UntilYield is ctx, also cancelled once Yield closes (a preferred
// candidate should lead); cancel releases what it holds.
func (l *Leadership) UntilYield(ctx context.Context) (context.Context, context.CancelFunc) {
	yctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-l.Yield():
			cancel()
		case <-yctx.Done():
		}
	}()
	return yctx, cancel
}

// DefaultValue is the value a candidate proclaims when given none:
// hostname-pid ("coordctl" when the host has no name).
func DefaultValue() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "coordctl"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}
