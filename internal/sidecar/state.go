package sidecar

import (
	"time"

	"github.com/coordkit/coordkit/fencing"
)

// State is what one sidecar knows about its election. It changes only by
// Apply, which is pure: the driver turns what the election and the session
// report into Events, and tests feed Events directly.
type State struct {
	// Name is the election name; ID is this instance's candidate value.
	Name string
	ID   string
	// Scope is the fencing scope of the leaders' tokens
	// (election.Leadership.Scope).
	Scope string
	// Leader is the leader's ID and Token its fencing token; HasLeader is
	// false while no candidate leads (or none is known yet).
	Leader    string
	Token     fencing.Token
	HasLeader bool
	// IsLeader is true while this instance holds the leadership.
	IsLeader bool
	// Since is when the current leader (or the absence of one) was first seen.
	Since time.Time
	// Healthy is true while the sidecar has a live session with etcd;
	// Reason says why it is not (or why it last lost the leadership).
	Healthy bool
	Reason  string

	// leaderAlive and sessionAlive are asked at the moment of a probe: the
	// local deadline of the lease can pass between two events.
	leaderAlive  func() bool
	sessionAlive func() bool
}

// NewState returns the state of a sidecar that has not connected yet.
func NewState(name, id string, now time.Time) State {
	return State{Name: name, ID: id, Since: now, Reason: "connecting to etcd"}
}

// EventKind says what happened.
type EventKind int

// The events that move a State.
const (
	// SessionUp: a session (lease) with etcd was established. Alive reports
	// whether it is still alive at a given moment.
	SessionUp EventKind = iota + 1
	// SessionDown: the session ended or etcd could not be reached (Reason).
	SessionDown
	// LeaderObserved: the election's leader is Leader with Token; Token 0
	// means there is none.
	LeaderObserved
	// Elected: this instance won with Token. Alive reports whether the
	// leadership is still alive (its local deadline not passed).
	Elected
	// Deposed: this instance stopped leading (Reason: resigned, lease lost…).
	Deposed
	// LeaderUnknown: etcd has not answered for longer than the last
	// leader's lease TTL, so that leader may be gone (Reason); a standby
	// shows no leader until etcd answers again.
	LeaderUnknown
)

func (k EventKind) String() string {
	switch k {
	case SessionUp:
		return "session-up"
	case SessionDown:
		return "session-down"
	case LeaderObserved:
		return "leader-observed"
	case Elected:
		return "elected"
	case Deposed:
		return "deposed"
	case LeaderUnknown:
		return "leader-unknown"
	default:
		return "unknown"
	}
}

// Event is one observation fed to State.Apply.
type Event struct {
	Kind   EventKind
	At     time.Time
	Leader string
	Token  fencing.Token
	Reason string
	Alive  func() bool
}

// Change says what an Apply changed, so the driver knows what to report.
type Change struct {
	// LeaderChanged: the leader or its token changed (including to none).
	LeaderChanged bool
	// Won and Lost: this instance started or stopped leading.
	Won, Lost bool
	// HealthChanged: Healthy flipped.
	HealthChanged bool
}

// Visible reports whether the change is visible in the leader view
// (GET /v1/leader, the watch stream).
func (c Change) Visible() bool { return c.LeaderChanged || c.Won || c.Lost }

// Apply returns the state after ev and what changed. Rules:
//
//   - Observations are ignored while this instance leads unless they show a
//     higher token than its own: the election reports leaders in token order,
//     so a lower token or "none" is an observation from before the win that
//     arrived late. A higher token means this instance was deposed.
//   - Losing the session deposes the leader: leadership lives on the lease.
//   - A leader that is deposed forgets itself as leader; the next
//     observation says who leads now.
func (s State) Apply(ev Event) (State, Change) {
	var c Change
	before := s
	switch ev.Kind {
	case SessionUp:
		s.Healthy, s.Reason = true, ""
		s.sessionAlive = ev.Alive
	case SessionDown:
		s.Healthy, s.Reason = false, ev.Reason
		s.sessionAlive = nil
		if s.IsLeader {
			s = s.depose(ev.At)
		}
	case LeaderObserved:
		if s.IsLeader && ev.Token <= s.Token {
			break
		}
		if s.IsLeader {
			s = s.depose(ev.At)
			if s.Reason == "" {
				s.Reason = "a newer leader was elected"
			}
		}
		if ev.Token == 0 {
			s = s.setLeader(false, "", 0, ev.At)
		} else {
			s = s.setLeader(true, ev.Leader, ev.Token, ev.At)
		}
	case Elected:
		if s.IsLeader && ev.Token < s.Token {
			break // cannot happen with one election; keep the newer token
		}
		s.IsLeader = true
		s.leaderAlive = ev.Alive
		if s.Healthy {
			s.Reason = ""
		}
		s = s.setLeader(true, s.ID, ev.Token, ev.At)
	case LeaderUnknown:
		if s.IsLeader {
			break // a leader knows itself: its session's deadline decides
		}
		s = s.setLeader(false, "", 0, ev.At)
	case Deposed:
		if !s.IsLeader {
			break
		}
		s = s.depose(ev.At)
		if ev.Reason != "" {
			s.Reason = ev.Reason
		}
	}
	c.LeaderChanged = before.HasLeader != s.HasLeader || before.Leader != s.Leader || before.Token != s.Token
	c.Won = !before.IsLeader && s.IsLeader
	c.Lost = before.IsLeader && !s.IsLeader
	c.HealthChanged = before.Healthy != s.Healthy
	return s, c
}

func (s State) setLeader(has bool, leader string, tok fencing.Token, at time.Time) State {
	if s.HasLeader != has || s.Leader != leader || s.Token != tok {
		s.HasLeader, s.Leader, s.Token, s.Since = has, leader, tok, at
	}
	return s
}

// depose ends this instance's leadership; the leader it was is forgotten.
func (s State) depose(at time.Time) State {
	s.IsLeader = false
	s.leaderAlive = nil
	if s.HasLeader && s.Leader == s.ID {
		s = s.setLeader(false, "", 0, at)
	}
	return s
}

// Ready reports whether this instance leads at this moment: it holds the
// leadership and the leadership's local deadline has not passed. It is
// asked per request, so a leader whose keepalives stopped turns unready
// before its lease can have expired on the server.
func (s State) Ready() (bool, string) {
	switch {
	case !s.IsLeader && s.HasLeader:
		return false, "not the leader (the leader is " + s.Leader + ", token " + s.Token.String() + ")"
	case !s.IsLeader:
		return false, "not the leader (no leader elected)"
	case s.leaderAlive != nil && !s.leaderAlive():
		return false, "leadership lost: lease deadline passed"
	}
	return true, ""
}

// Health reports whether the sidecar has a live session with etcd now.
func (s State) Health() (bool, string) {
	switch {
	case !s.Healthy:
		reason := s.Reason
		if reason == "" {
			reason = "no session"
		}
		return false, reason
	case s.sessionAlive != nil && !s.sessionAlive():
		return false, "session lost: lease deadline passed"
	}
	return true, ""
}
