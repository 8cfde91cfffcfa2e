package childproc

import (
	"context"
	"errors"
	"time"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// The adapters between what lock, semaphore and election hand out and the
// Hold that Supervise runs a command under, and the environment that
// command gets.

// Environment variables set for the command run under a hold; they
// replace inherited values (MergeEnv).
const (
	EnvLockName     = "COORD_LOCK_NAME"
	EnvLockKey      = "COORD_LOCK_KEY"
	EnvFencingToken = "COORD_FENCING_TOKEN"
	// EnvFencingScope is the scope the token fences: where the held key
	// lives in etcd (lock.Held.Scope, semaphore.Held.Scope,
	// election.Leadership.Scope), PREFIX+NAME/ for a lock or an election,
	// PREFIX+NAME/slots/I for a semaphore's slot. Set by every hold, so
	// that a lock run inside a semaphore's command does not inherit the
	// semaphore's scope.
	EnvFencingScope = "COORD_FENCING_SCOPE"
	EnvSemSlot      = "COORD_SEM_SLOT"
	EnvElection     = "COORD_ELECTION"
	EnvLeaderID     = "COORD_LEADER_ID"
)

// KeyEnv is the environment of a command run under a held key: the name,
// the key, its token and the scope the token fences, and extra name-value
// pairs.
func KeyEnv(name, key string, tok fencing.Token, scope string, extra ...string) map[string]string {
	env := map[string]string{EnvLockName: name, EnvLockKey: key, EnvFencingToken: tok.String(), EnvFencingScope: scope}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

// LeaderEnv is the environment of a command run while leading an election:
// the election's name, the value proclaimed, the token and the scope it
// fences, and extra name-value pairs.
func LeaderEnv(election, id string, tok fencing.Token, scope string, extra ...string) map[string]string {
	env := map[string]string{EnvElection: election, EnvLeaderID: id, EnvFencingToken: tok.String(), EnvFencingScope: scope}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

// Liveness is what lock.Held, semaphore.Held and election.Leadership say
// about themselves.
type Liveness interface {
	Lost() <-chan struct{}
	Err() error
	Alive() bool
}

// KeyHold is a held key as Supervise sees it: its liveness, the session it
// is on, and its release.
type KeyHold struct {
	Liveness
	Sess        *session.Session
	ReleaseFunc func() error
}

// Session returns the session the key is held on.
func (h KeyHold) Session() *session.Session { return h.Sess }

// Release calls ReleaseFunc.
func (h KeyHold) Release() error { return h.ReleaseFunc() }

var _ Hold = KeyHold{}

// AnchorHold is an anchor's lock (redsync, a PostgreSQL advisory lock) as
// Supervise sees it: never known to be lost — like a user's wrapper around
// such a lock, nothing stops the command when it expires or its connection
// dies: these locks tell no one — and on no session.
type AnchorHold struct{ ReleaseFunc func() error }

func (AnchorHold) Lost() <-chan struct{}     { return nil }
func (AnchorHold) Err() error                { return nil }
func (AnchorHold) Alive() bool               { return true }
func (AnchorHold) Session() *session.Session { return nil }

// Release calls ReleaseFunc.
func (h AnchorHold) Release() error { return h.ReleaseFunc() }

var _ Hold = AnchorHold{}

// CloseGrace bounds the clean-up after a loss, when etcd may be gone.
const CloseGrace = time.Second

// Releaser returns the release of a held key for KeyHold: unlock within
// timeout (a command's --command-timeout), and within CloseGrace once lost;
// a key already lost (session.ErrNotHeld) is no error, the caller reports
// the loss. ctx's cancellation does not stop the release.
func Releaser(ctx context.Context, l Liveness, timeout time.Duration, unlock func(context.Context) error) func() error {
	return func() error {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		if l.Err() != nil {
			// Lost: removing a key that may still be there only speeds up
			// the next holder; do not let an unreachable etcd hold up exit.
			uctx, cancel = context.WithTimeout(uctx, CloseGrace)
			defer cancel()
		}
		if err := unlock(uctx); err != nil && !errors.Is(err, session.ErrNotHeld) {
			return err
		}
		return nil
	}
}

// WaitAtMost runs fn and waits for it at most d (fn goes on running).
func WaitAtMost(d time.Duration, fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
