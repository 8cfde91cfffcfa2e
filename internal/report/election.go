package report

import (
	"context"
	"fmt"
	"strings"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/primitive"
)

// Event is a campaign's event as `coordctl elect` and the sidecar print
// it: "elected" once it leads, "handed-over" when it stepped down for a
// preferred candidate, "lost" if it stopped leading without being asked
// (Reason says why).
type Event struct {
	Event  string        `json:"event"`
	Name   string        `json:"name"`
	ID     string        `json:"id"`
	Token  fencing.Token `json:"token"`
	Reason string        `json:"reason,omitempty"`
}

// EventOf is l's event of kind kind ("elected", "handed-over", "lost")
// with reason.
func EventOf(l *election.Leadership, kind, reason string) Event {
	return Event{Event: kind, Name: l.Name(), ID: l.Value(), Token: l.Token(), Reason: reason}
}

// String is the event as one text line; the ID as primitive.TextValue
// (an ID with a newline cannot forge a line).
func (ev Event) String() string {
	id := primitive.TextValue(ev.ID)
	switch ev.Event {
	case "elected":
		return fmt.Sprintf("elected leader of %s as %s (token %d)", ev.Name, id, ev.Token)
	case "handed-over":
		return fmt.Sprintf("handed leadership of %s over as %s (token %d): %s", ev.Name, id, ev.Token, ev.Reason)
	}
	return fmt.Sprintf("lost leadership of %s as %s (token %d): %s", ev.Name, id, ev.Token, ev.Reason)
}

// StepDown is l.StepDown as an event: the "handed-over" event when the
// holder yielded to a preferred candidate (its Reason says whether the
// handover was made or it resigned), nil when it resigned plainly.
func StepDown(ctx context.Context, l *election.Leadership) (*Event, error) {
	yielded, herr, err := l.StepDown(ctx)
	if !yielded || err != nil {
		return nil, err
	}
	reason := "a preferred candidate joined: handed over to it"
	if herr != nil {
		reason = "a preferred candidate joined, but the handover failed (" + herr.Error() + "): resigned"
	}
	ev := EventOf(l, "handed-over", reason)
	return &ev, nil
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

// LeaderEventOf is the "leader" event of a leader seen (l nil: no leader).
func LeaderEventOf(l *election.Leader) LeaderEvent {
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
	return fmt.Sprintf("leader %s (token %d)", primitive.TextValue(*ev.Leader), ev.Token)
}

// Candidates is the queue of an election, leader first
// ({"event":"candidates","name":N,"candidates":[...]}); String is one
// candidate per line.
type Candidates struct {
	Event      string               `json:"event"` // "candidates"
	Name       string               `json:"name"`
	Candidates []election.Candidate `json:"candidates"`
}

// CandidatesOf reads e's queue (Election.Candidates' errors).
func CandidatesOf(ctx context.Context, e *election.Election) (Candidates, error) {
	cs, err := e.Candidates(ctx)
	if err != nil {
		return Candidates{}, err
	}
	if cs == nil {
		cs = []election.Candidate{}
	}
	return Candidates{Event: "candidates", Name: e.Name(), Candidates: cs}, nil
}

func (o Candidates) String() string {
	if len(o.Candidates) == 0 {
		return "no candidates in " + o.Name
	}
	lines := make([]string, len(o.Candidates))
	for i, c := range o.Candidates {
		lines[i] = c.String()
	}
	return strings.Join(lines, "\n")
}

// UntilYield is ctx, also cancelled once l.Yield closes (a preferred
// candidate should lead); cancel releases what it holds.
func UntilYield(ctx context.Context, l *election.Leadership) (context.Context, context.CancelFunc) {
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
