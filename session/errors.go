package session

import (
	"errors"
	"fmt"
)

// Errors of the session package: the lease's own, and the vocabulary of a
// key held on it, which lock, semaphore, election and claim share: they
// return these values (wrapped), and define only the errors that are theirs
// alone. Match them with errors.Is.
var (
	// ErrExpired means no keepalive succeeded before the local deadline: the
	// lease may already have expired on the server.
	ErrExpired = errors.New("session: lease expired: no keepalive succeeded before the local deadline")
	// ErrRevoked means the server no longer knows the lease: it was revoked
	// or it expired there. A key held on it that was seen deleted with it
	// is lost with ErrRevoked too (and ErrKeyGone).
	ErrRevoked = errors.New("session: lease revoked or expired on the server")
	// ErrClosed means Close was called: on the session, or on the lock,
	// semaphore or election that owned it.
	ErrClosed = errors.New("session: closed")
	// ErrBadTTL is returned by New, and by the constructors of lock,
	// semaphore and election, for a TTL below MinTTL or above MaxTTL, which
	// etcd would refuse (CheckTTL).
	ErrBadTTL = errors.New("session: TTL out of bounds")
	// ErrUnavailable is returned by New when etcd grants no lease in time
	// or reports that it has no leader: the cluster has lost its quorum,
	// or no member can be reached.
	ErrUnavailable = errors.New("session: etcd unavailable (no leader, no quorum or unreachable)")

	// ErrInvalidName is returned for the name of a lock, semaphore,
	// election or claim that cannot be what its user meant: empty, an empty
	// segment (a leading, trailing or double "/"), white space or a control
	// character, or a last segment another name's keys use ("N/read").
	ErrInvalidName = errors.New("session: invalid name")
	// ErrLost is wrapped, with the reason (ErrExpired, ErrRevoked, ErrClosed
	// or ErrKeyGone), by HeldKey.Err and the cause of HeldKey.Context once
	// the key is lost while held.
	ErrLost = errors.New("session: key lost while held")
	// ErrNotHeld is returned by HeldKey.Release on a key that is no longer
	// held: released already, or lost (then the error also wraps ErrLost).
	// After Release it is HeldKey.Err.
	ErrNotHeld = errors.New("session: key not held")
	// ErrKeyGone is the reason of a loss when the held key was deleted or
	// replaced behind the holder's back (etcdctl del); when it went with
	// its revoked lease the error wraps ErrRevoked as well.
	ErrKeyGone = errors.New("session: key deleted or replaced")
	// ErrNotOwner is returned by HeldKey.Txn when its guard (IsOwner)
	// failed: the key is gone or was recreated, nothing was applied.
	ErrNotOwner = errors.New("session: not owner of the key")
	// ErrNameInUse is returned when a name is held by another kind of
	// primitive: a lock on a semaphore's name, or the reverse. The error
	// names the other primitive's key that was found.
	ErrNameInUse = errors.New("session: name in use by another kind of primitive")
	// ErrGoneWhileWaiting is returned by an acquisition (Lock, Acquire,
	// Campaign) whose own key or session vanished before it was granted: it
	// never held anything.
	ErrGoneWhileWaiting = errors.New("session: session expired while waiting")
)

// errReleased is HeldKey.Err and the cause of its Context after Release,
// unless HoldConfig.ReleaseCause gives another.
var errReleased = fmt.Errorf("%w: released", ErrNotHeld)

// lostError builds the error of a lost key: it matches ErrLost and reason.
func lostError(reason error) error { return fmt.Errorf("%w: %w", ErrLost, reason) }
