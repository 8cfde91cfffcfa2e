package fencing

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Errors of the fencing package. Match them with errors.Is.
var (
	// ErrStale is matched by every *StaleError: the token is below the floor.
	ErrStale = errors.New("fencing: stale token")
	// ErrInvalidToken is wrapped by ParseToken's errors and returned for a zero token.
	ErrInvalidToken = errors.New("fencing: invalid token")
	// ErrInvalidScope is returned for an empty or over-long scope.
	ErrInvalidScope = errors.New("fencing: invalid scope")
	// ErrCorrupt is matched by every *CorruptError: a log holds a damaged
	// record that is not a torn final write.
	ErrCorrupt = errors.New("fencing: corrupt log")
	// ErrRepairNeedsBound is returned by Repair asked to apply without a
	// bound when a record it would drop cannot be trusted.
	ErrRepairNeedsBound = errors.New("fencing: repair needs a bound on the tokens granted")
	// ErrBoundBelowFloor is returned by Repair for a bound below a floor the
	// log holds.
	ErrBoundBelowFloor = errors.New("fencing: repair bound below a floor")
	// ErrClosed is returned by a DurableGuard or Resource after Close, and after a failed fsync.
	ErrClosed = errors.New("fencing: closed")
	// ErrDirInUse is returned when another process holds the data directory or
	// log (not to be confused with lock.ErrLocked, a lock held by another holder).
	ErrDirInUse = errors.New("fencing: data dir in use by another process")
	// ErrNotFound is returned by Client.Get for a key that was never written (HTTP 404).
	ErrNotFound = errors.New("fencing: key not found")
	// ErrVersionMismatch is returned for a failed If-Match precondition (HTTP 412).
	ErrVersionMismatch = errors.New("fencing: version mismatch")
	// ErrIdempotencyConflict is returned when an Idempotency-Key is reused for a different request (HTTP 422).
	ErrIdempotencyConflict = errors.New("fencing: idempotency key reused with a different request")
	// ErrTooLarge is returned for a value over MaxValueSize (HTTP 413).
	ErrTooLarge = errors.New("fencing: value too large")
	// ErrBadRequest is returned when the server rejects a malformed request (HTTP 400).
	ErrBadRequest = errors.New("fencing: bad request")
	// ErrInvalidURL is returned by NewClient for a URL that is not
	// http:// or https:// with a host.
	ErrInvalidURL = errors.New("fencing: invalid resource URL")
	// ErrInvalidTimeout is returned by NewClient for a request timeout
	// that is not positive.
	ErrInvalidTimeout = errors.New("fencing: invalid request timeout")
)

// StaleError reports a token below the floor of its scope. It matches
// ErrStale with errors.Is; use errors.As to read the fields.
type StaleError struct {
	Scope string
	Token Token
	Floor Token
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("fencing: stale token %d for scope %q: floor is %d", e.Token, e.Scope, e.Floor)
}

// Is makes errors.Is(err, ErrStale) true for every *StaleError.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// MaxScopeLen is the longest scope, in bytes, the Guard accepts.
const MaxScopeLen = 512

// ValidateScope checks that a scope is usable: non-empty, at most
// MaxScopeLen bytes, valid UTF-8 (JSON, in which the resource logs scopes,
// would replace invalid bytes and merge distinct scopes), no control
// characters. Its errors wrap ErrInvalidScope.
func ValidateScope(scope string) error {
	if scope == "" {
		return fmt.Errorf("%w: empty", ErrInvalidScope)
	}
	if !utf8.ValidString(scope) {
		return fmt.Errorf("%w %q: not valid UTF-8", ErrInvalidScope, scope)
	}
	if len(scope) > MaxScopeLen {
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidScope, MaxScopeLen)
	}
	for _, r := range scope {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w %q: control character", ErrInvalidScope, scope)
		}
	}
	return nil
}

// CorruptError reports a damaged record in a log: one that is there in full
// (its length does not run past the end of the file) but fails a checksum or
// cannot be decoded. It matches ErrCorrupt with errors.Is. Type, Scope and
// Token are what could be read from the damaged payload, if anything; they
// are not verified. DataDir is set for a Resource's log, to name the repair.
type CorruptError struct {
	Path    string
	DataDir string
	Offset  int64
	Reason  string
	Type    string
	Scope   string
	Token   Token
}

func (e *CorruptError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fencing: corrupt log")
	if e.Path != "" {
		fmt.Fprintf(&b, " %s", e.Path)
	}
	fmt.Fprintf(&b, ": record at offset %d: %s", e.Offset, e.Reason)
	if e.Type != "" || e.Scope != "" || e.Token != 0 {
		b.WriteString(" (as far as it can be read:")
		if e.Type != "" {
			fmt.Fprintf(&b, " type %s", e.Type)
		}
		if e.Scope != "" {
			fmt.Fprintf(&b, " scope %q", e.Scope)
		}
		if e.Token != 0 {
			fmt.Fprintf(&b, " token %d", e.Token)
		}
		b.WriteString(")")
	}
	if e.DataDir != "" {
		fmt.Fprintf(&b, "; refusing to start rather than lose acknowledged state: run 'coordctl resource repair --data-dir %s' to see what would be dropped", e.DataDir)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrCorrupt) true for every *CorruptError.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// describe fills Type, Scope and Token from a payload, if it decodes.
func (e *CorruptError) describe(payload []byte) {
	var r struct {
		Type  string `json:"t"`
		Scope string `json:"scope"`
		Token Token  `json:"token"`
	}
	if json.Unmarshal(payload, &r) != nil {
		return
	}
	e.Type, e.Scope, e.Token = r.Type, r.Scope, r.Token
	if e.Type == "" && e.Scope != "" {
		e.Type = "floor"
	}
}
