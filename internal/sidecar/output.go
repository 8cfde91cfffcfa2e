package sidecar

import (
	"fmt"
	"io"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/primitive"
)

// The lines of `coordctl sidecar`'s output stream, one per event: their
// JSON form is the stable contract, String the text form.
type (
	// ListeningLine is the first line: the API is served at URL.
	ListeningLine struct {
		Event string `json:"event"` // "listening"
		URL   string `json:"url"`
	}
	// ElectedLine: this instance leads with Token.
	ElectedLine struct {
		Event    string        `json:"event"` // "elected"
		Election string        `json:"election"`
		ID       string        `json:"id"`
		Token    fencing.Token `json:"token"`
	}
	// LostLine: this instance stopped leading without being asked.
	LostLine struct {
		Event    string `json:"event"` // "lost"
		Election string `json:"election"`
		ID       string `json:"id"`
		Reason   string `json:"reason"`
	}
	// LeaderLine reports a change of leader; Leader and Token are null
	// when there is none.
	LeaderLine struct {
		Event    string         `json:"event"` // "leader"
		Election string         `json:"election"`
		Leader   *string        `json:"leader"`
		Token    *fencing.Token `json:"token"`
	}
)

// NewListening is the ListeningLine of url.
func NewListening(url string) ListeningLine { return ListeningLine{Event: "listening", URL: url} }

func (e ListeningLine) String() string { return "ready url=" + e.URL }
func (e ElectedLine) String() string {
	return fmt.Sprintf("elected id=%s token=%s", primitive.TextValue(e.ID), e.Token)
}
func (e LostLine) String() string {
	return fmt.Sprintf("lost id=%s reason=%q", primitive.TextValue(e.ID), e.Reason)
}

func (e LeaderLine) String() string {
	if e.Leader == nil {
		return "leader none"
	}
	return fmt.Sprintf("leader id=%s token=%s", primitive.TextValue(*e.Leader), e.Token)
}

// OutputLines is a Config.OnChange that turns state changes into output
// lines through print: ElectedLine, LostLine and LeaderLine; session trouble
// goes to errOut. print's errors are ignored: a broken output ends nothing.
func OutputLines(print func(any) error, errOut io.Writer) func(State, Change) {
	return func(s State, c Change) {
		if c.Won {
			_ = print(ElectedLine{Event: "elected", Election: s.Name, ID: s.ID, Token: s.Token})
		}
		if c.Lost {
			_ = print(LostLine{Event: "lost", Election: s.Name, ID: s.ID, Reason: s.Reason})
		}
		if c.LeaderChanged {
			ev := LeaderLine{Event: "leader", Election: s.Name}
			if s.HasLeader {
				leader, tok := s.Leader, s.Token
				ev.Leader, ev.Token = &leader, &tok
			}
			_ = print(ev)
		}
		if c.HealthChanged {
			if ok, reason := s.Health(); !ok {
				fmt.Fprintf(errOut, "coordctl sidecar: unhealthy: %s\n", reason)
			} else {
				fmt.Fprintln(errOut, "coordctl sidecar: connected")
			}
		}
	}
}
