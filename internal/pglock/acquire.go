package pglock

import (
	"context"
	"errors"
	"time"

	"github.com/coordkit/coordkit/fencing"
)

// Errors of Acquire, besides Open's: they say which step failed, and
// match with errors.Is next to the step's own error, whose text they keep.
var (
	// ErrNotAcquired: the lock connection was open but the lock was not
	// granted within AcquireConfig.Timeout (or ctx ended first).
	ErrNotAcquired = errors.New("pglock: not acquired")
	// ErrNoToken: the lock was granted but taking the token failed; the
	// lock connection is closed, so nothing is held.
	ErrNoToken = errors.New("pglock: no token")
)

// AcquireConfig is what Acquire takes: the lock on Name at DSN, dialed
// through Via when set (host:port, a fault proxy), with DialTimeout and
// Keepalive (Open's options), a wait bounded by Timeout (0: without end),
// and with Sequence set a token, nextval(Sequence), after the grant.
type AcquireConfig struct {
	DSN, Name, Via, Sequence string
	DialTimeout, Timeout     time.Duration
	Keepalive                Keepalive
}

// Acquire opens the lock connection, takes the lock and, with a Sequence,
// the token (0 without). On an error nothing is held and the connection is
// closed: Open's errors (ErrInvalid, ErrUnreachable, ErrRefused), or one
// matching ErrNotAcquired or ErrNoToken. The caller unlocks and closes the
// Lock.
func Acquire(ctx context.Context, cfg AcquireConfig) (*Lock, fencing.Token, error) {
	opts := []Option{WithDialTimeout(cfg.DialTimeout), WithKeepalive(cfg.Keepalive)}
	if cfg.Via != "" {
		opts = append(opts, WithVia(cfg.Via))
	}
	l, err := Open(ctx, cfg.DSN, cfg.Name, opts...)
	if err != nil {
		return nil, 0, err
	}
	if err := l.LockWithin(ctx, cfg.Timeout); err != nil {
		_ = l.Close()
		return nil, 0, &stepError{ErrNotAcquired, err}
	}
	var token fencing.Token
	if cfg.Sequence != "" {
		if token, err = l.Token(ctx, cfg.Sequence); err != nil {
			_ = l.Close()
			return nil, 0, &stepError{ErrNoToken, err}
		}
	}
	return l, token, nil
}

// stepError is err, also matching kind.
type stepError struct{ kind, err error }

func (e *stepError) Error() string   { return e.err.Error() }
func (e *stepError) Unwrap() []error { return []error{e.err, e.kind} }
