package primitive

import (
	"errors"
	"fmt"
	"time"
	"unicode"

	"github.com/coordkit/coordkit/session"
)

// ErrInvalid is wrapped by Validate's errors that are neither a name's
// (session.ErrInvalidName) nor a TTL's (session.ErrBadTTL): a limit below
// 1, a negative lock delay, a prefix that cannot be typed, a given session
// combined with options for the handle's own sessions.
var ErrInvalid = errors.New("invalid configuration")

// Kind is which primitive a Config configures.
type Kind int

// The primitives.
const (
	KindLock Kind = iota + 1
	KindSemaphore
	KindElection
)

func (k Kind) String() string {
	switch k {
	case KindLock:
		return "lock"
	case KindSemaphore:
		return "semaphore"
	case KindElection:
		return "election"
	}
	return "primitive"
}

// Config is the configuration every primitive has: which name, where its
// keys live, and the session its keys are held on. lock, semaphore and
// election fill it from their options; coordctl fills it from its flags and
// calls Validate before it dials. The rules are here and nowhere else.
type Config struct {
	Kind Kind
	// Name is the primitive's name (ValidateName).
	Name string
	// Prefix is put in front of the name, as given: the keys live under
	// Prefix+Name+"/".
	Prefix string
	// TTL is the lease TTL of the handle's own sessions; 0 means
	// session.DefaultTTL. Bounds: session.CheckTTL.
	TTL time.Duration
	// Session, if set, is the caller's session: every key is held on it,
	// and TTL and SessionOptions must be unset.
	Session *session.Session
	// SessionOptions are given to the handle's own sessions.
	SessionOptions []session.Option
	// LockDelay is how long a waiter that saw its predecessor lost waits
	// before it takes over (lock and semaphore); at least 0.
	LockDelay time.Duration
	// Limit is a semaphore's number of slots, at least 1 (0 for the others).
	Limit int
}

// Validate reports the first rule the configuration breaks: a *FieldError
// naming the field, whose error wraps session.ErrInvalidName,
// session.ErrBadTTL or ErrInvalid and says which value broke which rule.
func (c Config) Validate() error {
	if err := c.ValidateKeys(); err != nil {
		return err
	}
	switch {
	case c.Session != nil && (c.TTL != 0 || len(c.SessionOptions) > 0):
		return fieldErrorf(FieldSession, "%w: a given session cannot be combined with a TTL or options for the %s's own sessions", ErrInvalid, c.Kind)
	case c.Session == nil:
		if err := session.CheckTTL(c.OwnTTL()); err != nil {
			return &FieldError{Field: FieldTTL, Err: err}
		}
	}
	switch {
	case c.LockDelay < 0:
		return fieldErrorf(FieldLockDelay, "%w: the lock delay must not be negative, got %s", ErrInvalid, c.LockDelay)
	case c.LockDelay > 0 && c.Kind == KindElection:
		return fieldErrorf(FieldLockDelay, "%w: an election has no lock delay", ErrInvalid)
	case c.Kind == KindSemaphore && c.Limit < 1:
		return fieldErrorf(FieldLimit, "%w: the limit must be a whole number of at least 1, got %d", ErrInvalid, c.Limit)
	case c.Kind != KindSemaphore && c.Limit != 0:
		return fieldErrorf(FieldLimit, "%w: a %s has no limit", ErrInvalid, c.Kind)
	}
	return nil
}

// Field names a field of Config in a FieldError.
type Field string

// The fields Validate checks.
const (
	FieldName      Field = "name"
	FieldPrefix    Field = "prefix"
	FieldSession   Field = "session"
	FieldTTL       Field = "ttl"
	FieldLockDelay Field = "lock delay"
	FieldLimit     Field = "limit"
)

// FieldError is Validate's error: the field, and the rule it broke. A
// command maps Field to its flag.
type FieldError struct {
	Field Field
	Err   error
}

func (e *FieldError) Error() string { return e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

func fieldErrorf(f Field, format string, args ...any) error {
	return &FieldError{Field: f, Err: fmt.Errorf(format, args...)}
}

// ValidateKeys checks only what places the keys: the name and the prefix
// (for calls that read or write a name's keys without holding anything),
// the name's rules (ValidateName) applied to the prefix and the name
// together where they are about the keys' place.
func (c Config) ValidateKeys() error {
	if err := ValidateName(c.Name); err != nil {
		return &FieldError{Field: FieldName, Err: err}
	}
	for _, r := range c.Prefix {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fieldErrorf(FieldPrefix, "%w: prefix %q contains white space or a control character (%U)", ErrInvalid, c.Prefix, r)
		}
	}
	// ValidateName's last rule, where the keys live: the prefix "N/" and
	// the name "slots" put them under N/slots/, among the slots of the
	// semaphore N (a lock there would count slot 0 as a holder). Without a
	// prefix ValidateName has refused such a name already.
	if seg, parent := reservedEnd(c.Prefix + c.Name); seg != "" {
		return fieldErrorf(FieldName, "%w: the name %q under the prefix %q puts its keys under %q, which the keys of %q's read-write lock or semaphore use (its keys could not be told from theirs)",
			session.ErrInvalidName, c.Name, c.Prefix, c.KeyPrefix(), parent)
	}
	return c.checkScopeLen()
}

// OwnTTL is the lease TTL of the handle's own sessions: TTL, or
// session.DefaultTTL.
func (c Config) OwnTTL() time.Duration {
	if c.TTL == 0 {
		return session.DefaultTTL
	}
	return c.TTL
}

// KeyPrefix is where the primitive's keys live: Prefix+Name+"/".
func (c Config) KeyPrefix() string { return c.Prefix + c.Name + "/" }

// OwnSessionOptions are the options of the handle's own sessions: the TTL,
// then SessionOptions.
func (c Config) OwnSessionOptions() []session.Option {
	return append([]session.Option{session.WithTTL(c.OwnTTL())}, c.SessionOptions...)
}
