package sidecar

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/buildinfo"
	"github.com/coordkit/coordkit/session"
)

// Coordination is the sidecar's place in a coordinated election: the
// policy every sidecar of the election follows, and this instance's
// attributes. The sidecar always publishes its attributes (outside the
// election's prefix, so etcd's own clients see only etcd's layout), so that
// GET /v1/candidates shows them and POST /v1/resign?to=ID can name it.
type Coordination struct {
	// Policy chooses the preferred leader; first-come when empty.
	Policy election.Policy
	// NoPreempt: a preferred instance that joins waits for the leader to
	// resign instead of taking over.
	NoPreempt bool
	// Priority and Version are this instance's attributes. Version empty
	// means the binary's version (DefaultVersion), if it is a semantic one.
	Priority int64
	Version  string
	// Labels are shown by GET /v1/candidates.
	Labels map[string]string
}

func (c Coordination) check() error {
	if _, err := election.ParsePolicy(string(c.Policy)); err != nil {
		return fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if c.Version != "" && !election.ValidVersion(c.Version) {
		return fmt.Errorf("%w: version %q is not a semantic version", ErrBadConfig, c.Version)
	}
	return nil
}

func (c Coordination) withDefaults() Coordination {
	if c.Version == "" {
		if v := DefaultVersion(); election.ValidVersion(v) {
			c.Version = v
		}
	}
	c.Labels = maps.Clone(c.Labels)
	return c
}

// options are the election options of a campaign as id.
func (c Coordination) options(id string) []election.Option {
	return []election.Option{election.WithCoordination(election.Preference{Policy: c.Policy, NoPreempt: c.NoPreempt},
		election.Attributes{ID: id, Priority: c.Priority, Version: c.Version, Labels: c.Labels})}
}

// DefaultVersion is the version of the running binary (buildinfo: the main
// module's version, a tag or a pseudo-version), "" when it has none.
func DefaultVersion() string {
	switch v := buildinfo.Read().Version; v {
	case "(devel)", "unknown":
		return ""
	default:
		return v
	}
}

// Candidates returns the election's queue with each candidate's
// attributes; ErrConnecting before the sidecar reached etcd.
func (s *Sidecar) Candidates(ctx context.Context) ([]election.Candidate, error) {
	cli := s.etcd()
	if cli == nil {
		return nil, ErrConnecting
	}
	e, err := election.New(cli, s.cfg.Name, election.WithPrefix(s.cfg.Prefix))
	if err != nil {
		return nil, err
	}
	return e.Candidates(ctx)
}

// Policy returns the policy this sidecar follows.
func (s *Sidecar) Policy() election.Policy {
	p, _ := election.ParsePolicy(string(s.cfg.Policy))
	return p
}

// ResignTo hands the leadership to the instance with this ID, or with
// election.Best to the one the policy prefers: the instances queued before
// it step aside while this one keeps leading and its command runs; then it
// turns unready, the token file goes, the command stops, and last the key
// is deleted, so the target leads next with a higher token. This instance
// then stays out of the queue for one TTL (long enough for a preStop
// hook's SIGTERM to arrive before a policy could hand leadership back) and
// campaigns again. Errors: ErrNotLeader; election.ErrNoCandidate and
// election.ErrHandoverBlocked with the leadership kept; ctx's error.
func (s *Sidecar) ResignTo(ctx context.Context, to string) error {
	s.mu.Lock()
	l := s.leading
	s.mu.Unlock()
	if l == nil {
		return ErrNotLeader
	}
	return s.ask(ctx, resignRequest{l: l, to: &to, done: make(chan error, 1)})
}

// handOver hands h's leadership over to target (an id, or election.Best):
// once the handover can be made the command stops (through Supervise) and
// then the leader resigns, no other candidate leading in between. ended
// reports that the leadership ended; a handover that could not be made
// (err, ended false) leaves the leadership and the command as they were.
// After a handover asked for (standAside) this instance stays out of the
// queue for one TTL before campaigning again; after one its policy asked
// for (a yield) it queues again at once: it is not the preferred candidate,
// so it will not be handed leadership back.
func (s *Sidecar) handOver(h *leaderHold, target string, standAside bool) (ended bool, err error) {
	reason := "resigned to " + target
	switch {
	case !standAside:
		reason = "handed over to a preferred candidate"
	case target == election.Best:
		reason = "resigned to the best other candidate"
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.TTL+5*time.Second)
	defer cancel()
	stopped := false
	err = h.ResignToWith(ctx, target, func() {
		stopped = true
		h.stopForHandover(reason)
	})
	if stopped {
		h.result <- err // Release returns it to Supervise
	}
	if errors.Is(err, election.ErrNotLeader) {
		err = ErrNotLeader
	}
	if stopped && standAside {
		s.mu.Lock()
		s.standAside = true
		s.mu.Unlock()
	}
	return stopped, err
}

// waitStandAside waits out the stand-aside after a resign-to; false when
// ctx or the session ended meanwhile.
func (s *Sidecar) waitStandAside(ctx context.Context, sess *session.Session) bool {
	s.mu.Lock()
	wait := s.standAside
	s.standAside = false
	s.mu.Unlock()
	if !wait {
		return true
	}
	t := s.cfg.Clock.NewTimer(s.cfg.TTL)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	case <-sess.Done():
		return false
	}
}
